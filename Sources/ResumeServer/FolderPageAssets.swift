/// The folder page's script and styles, compiled into the binary (no CDN, no npm): served at
/// `/.resumectl/…`, a dot path no file can ever be served from.
///
/// The script uploads with tus 1.0.0 over `fetch`: a POST to the folder creates the upload, PATCHes
/// of 4 MiB send it, and the upload URL is kept in `localStorage` under the folder, the file's name,
/// size and modification time, so that choosing the same file after a reload or a closed tab asks
/// the server for its offset (HEAD) and continues from there. A failed request is retried with a
/// growing pause; pause and resume are per file.
enum FolderPageAssets {
    static let prefix = "/.resumectl/"

    /// The asset at `path` (below ``prefix``): its bytes and content type.
    static func asset(_ path: String) -> (body: String, contentType: String)? {
        switch path.dropFirst(prefix.count).prefix(while: { $0 != "?" }) {
        case "page.js": (script, "text/javascript; charset=utf-8")
        case "page.css": (styles, "text/css; charset=utf-8")
        default: nil
        }
    }

    static let styles = """
        body { font: 15px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 60em; padding: 0 1em; color: #222; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: .25em .75em .25em 0; border-bottom: 1px solid #eee; }
        td.size { text-align: right; font-variant-numeric: tabular-nums; }
        .drop { margin-top: 2em; padding: 1em; border: 2px dashed #bbb; border-radius: .5em; }
        .drop.over { border-color: #36c; background: #f3f7ff; }
        #uploads { list-style: none; padding: 0; }
        #uploads li { display: grid; grid-template-columns: 1fr 12em 10em 6em; gap: .5em; align-items: center; \
        margin: .3em 0; }
        #uploads progress { width: 100%; }
        """

    static let script = """
        "use strict";
        (() => {
          const CHUNK = 4 * 1024 * 1024;
          const folder = location.pathname.endsWith("/") ? location.pathname : location.pathname + "/";
          const list = document.getElementById("uploads");
          const picker = document.getElementById("picker");
          const area = document.getElementById("upload");
          const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
          const storageKey = (file) => "resumectl-upload|" + folder + "|" + file.name + "|" + file.size + "|" + \
        file.lastModified;
          const base64 = (text) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));

          class Fatal extends Error {}

          class Upload {
            constructor(file) {
              this.file = file;
              this.key = storageKey(file);
              this.url = null;
              this.offset = 0;
              this.paused = false;
              this.running = false;
              this.controller = null;
              this.row = document.createElement("li");
              this.row.dataset.name = file.name;
              const name = document.createElement("span");
              name.textContent = file.name;
              this.bar = document.createElement("progress");
              this.bar.max = Math.max(file.size, 1);
              this.bar.value = 0;
              this.status = document.createElement("span");
              this.status.className = "status";
              this.button = document.createElement("button");
              this.button.type = "button";
              this.button.textContent = "Pause";
              this.button.addEventListener("click", () => this.toggle());
              this.row.append(name, this.bar, this.status, this.button);
              list.append(this.row);
              this.start();
            }

            show(text) {
              this.status.textContent = text;
              this.row.dataset.state = text;
            }

            toggle() {
              if (this.paused) {
                this.paused = false;
                this.button.textContent = "Pause";
                this.start();
              } else {
                this.paused = true;
                this.button.textContent = "Resume";
                if (this.controller) this.controller.abort();
                this.show("paused");
              }
            }

            async request(method, url, headers, body) {
              this.controller = new AbortController();
              return fetch(url, {
                method,
                headers: Object.assign({ "Tus-Resumable": "1.0.0" }, headers),
                body,
                credentials: "same-origin",
                cache: "no-store",
                signal: this.controller.signal,
              });
            }

            /// The upload URL: the one stored for this file if the server still has it, else a new one.
            async locate() {
              const stored = localStorage.getItem(this.key);
              if (stored) {
                const head = await this.request("HEAD", stored, {});
                if (head.ok) {
                  this.offset = Number(head.headers.get("Upload-Offset"));
                  return stored;
                }
                if (head.status >= 500) throw new Error("server error " + head.status);
                localStorage.removeItem(this.key);
              }
              const created = await this.request("POST", folder, {
                "Upload-Length": String(this.file.size),
                "Upload-Metadata": "filename " + base64(this.file.name),
              });
              if (created.status === 409) throw new Fatal("a file of that name exists");
              if (created.status === 413) throw new Fatal("too large for this server");
              if (created.status !== 201) throw new Error("creation answered " + created.status);
              const url = new URL(created.headers.get("Location"), location.href).href;
              localStorage.setItem(this.key, url);
              this.offset = 0;
              return url;
            }

            async start() {
              if (this.running) return;
              this.running = true;
              let failures = 0;
              while (!this.paused) {
                try {
                  this.show("uploading");
                  this.url = await this.locate();
                  this.bar.value = this.offset;
                  while (this.offset < this.file.size) {
                    const end = Math.min(this.offset + CHUNK, this.file.size);
                    const answer = await this.request("PATCH", this.url, {
                      "Content-Type": "application/offset+octet-stream",
                      "Upload-Offset": String(this.offset),
                    }, this.file.slice(this.offset, end));
                    if (answer.status === 409 || answer.status === 404) throw new Error("offset changed");
                    if (answer.status !== 204) throw new Error("append answered " + answer.status);
                    this.offset = Number(answer.headers.get("Upload-Offset"));
                    this.bar.value = this.offset;
                    failures = 0;
                  }
                  localStorage.removeItem(this.key);
                  this.bar.value = this.bar.max;
                  this.show("done");
                  this.button.disabled = true;
                  this.running = false;
                  return;
                } catch (error) {
                  if (this.paused) break;
                  if (error instanceof Fatal) {
                    this.show("failed: " + error.message);
                    this.running = false;
                    return;
                  }
                  failures += 1;
                  this.show("retrying");
                  await sleep(Math.min(30000, 250 * 2 ** Math.min(failures, 7)));
                }
              }
              this.running = false;
            }
          }

          const add = (files) => { for (const file of files) new Upload(file); };
          picker.addEventListener("change", () => { add(picker.files); picker.value = ""; });
          area.addEventListener("dragover", (event) => { event.preventDefault(); area.classList.add("over"); });
          area.addEventListener("dragleave", () => area.classList.remove("over"));
          area.addEventListener("drop", (event) => {
            event.preventDefault();
            area.classList.remove("over");
            add(event.dataTransfer.files);
          });
        })();
        """
}
