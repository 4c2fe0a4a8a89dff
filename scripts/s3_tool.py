#!/usr/bin/env python3
"""boto3 calls the end-to-end tests make against the S3 peer (scripts/moto_server.py), one per run.

    s3_tool.py --endpoint URL --access-key AK --secret-key SK COMMAND ARGS...

Path-style addressing, region us-east-1, no retries, never the user's ~/.aws. The result goes to
stdout as one JSON value; an S3 error prints `S3ERROR <Code>: <message>` on stderr and exits 3.

commands:
  create-bucket BUCKET
  put BUCKET KEY FILE                       -> {"etag": "\"…\""}    (overwrites: a changed object)
  put-random BUCKET KEY SIZE                -> {"etag": …, "sha256": …}
  put-many BUCKET PREFIX COUNT SIZE         -> {"KEY": "sha256", …}  (PREFIX + "f000.bin" …; every
                                               fifth under PREFIX + "sub/")
  sha256 BUCKET KEY                         -> "hex"
  digests BUCKET [PREFIX]                   -> {"KEY": "sha256", …}  (every object)
  clear BUCKET [PREFIX]                     -> null   (deletes every object, 1,000 a request)
  head BUCKET KEY                           -> {"etag": …, "size": N}
  checksum BUCKET KEY                       -> {"crc32c": "…-N" or null, "type": "COMPOSITE" or null}
                                               (HeadObject with x-amz-checksum-mode: ENABLED)
  keys BUCKET [PREFIX]                      -> ["key", …]       (ListObjectsV2, all pages)
  uploads BUCKET                            -> [{"key": …, "uploadId": …}, …]
  parts BUCKET KEY UPLOAD_ID                -> [{"number": N, "size": N, "etag": …}, …]  (all pages)
  upload-part BUCKET KEY UPLOAD_ID NUMBER SIZE SEED
                                            -> {"etag": …}   SIZE random bytes (seeded) as part NUMBER
  abort BUCKET KEY UPLOAD_ID                -> null
  delete BUCKET KEY                         -> null
"""
import argparse
import hashlib
import json
import os
import random
import sys


def client(args):
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                 "https_proxy", "ALL_PROXY", "all_proxy", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        os.environ.pop(name, None)
    os.environ["AWS_CONFIG_FILE"] = os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
    import boto3
    from botocore.config import Config
    return boto3.client(
        "s3", endpoint_url=args.endpoint, region_name="us-east-1",
        aws_access_key_id=args.access_key, aws_secret_access_key=args.secret_key,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      # no CRC32 trailers or checksum headers moto would have to understand
                      request_checksum_calculation="when_required",
                      response_checksum_validation="when_required"))


def seeded(size, seed):
    return random.Random(seed).randbytes(size)


def run(args):
    s3 = client(args)
    a = args.rest
    cmd = args.command
    if cmd == "create-bucket":
        s3.create_bucket(Bucket=a[0])
        return None
    if cmd == "put":
        with open(a[2], "rb") as f:
            return {"etag": s3.put_object(Bucket=a[0], Key=a[1], Body=f)["ETag"]}
    if cmd == "put-random":
        body = os.urandom(int(a[2]))
        etag = s3.put_object(Bucket=a[0], Key=a[1], Body=body)["ETag"]
        return {"etag": etag, "sha256": hashlib.sha256(body).hexdigest()}
    if cmd == "put-many":
        bucket, prefix, count, size = a[0], a[1], int(a[2]), int(a[3])
        out = {}
        for i in range(count):
            key = f"{prefix}{'sub/' if i % 5 == 4 else ''}f{i:03d}.bin"
            body = os.urandom(size)
            s3.put_object(Bucket=bucket, Key=key, Body=body)
            out[key] = hashlib.sha256(body).hexdigest()
        return out
    if cmd == "sha256":
        body = s3.get_object(Bucket=a[0], Key=a[1])["Body"]
        h = hashlib.sha256()
        for chunk in iter(lambda: body.read(1 << 20), b""):
            h.update(chunk)
        return h.hexdigest()
    if cmd == "clear":
        kw = {"Bucket": a[0], "Prefix": a[1] if len(a) > 1 else ""}
        for page in s3.get_paginator("list_objects_v2").paginate(**kw):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:
                s3.delete_objects(Bucket=a[0], Delete={"Objects": keys, "Quiet": True})
        return None
    if cmd == "digests":
        out = {}
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=a[0], Prefix=a[1] if len(a) > 1 else ""):
            for o in page.get("Contents", []):
                h = hashlib.sha256()
                body = s3.get_object(Bucket=a[0], Key=o["Key"])["Body"]
                for chunk in iter(lambda: body.read(1 << 20), b""):
                    h.update(chunk)
                out[o["Key"]] = h.hexdigest()
        return out
    if cmd == "head":
        r = s3.head_object(Bucket=a[0], Key=a[1])
        return {"etag": r["ETag"], "size": r["ContentLength"]}
    if cmd == "checksum":
        r = s3.head_object(Bucket=a[0], Key=a[1], ChecksumMode="ENABLED")
        return {"crc32c": r.get("ChecksumCRC32C"), "type": r.get("ChecksumType")}
    if cmd == "keys":
        kw = {"Bucket": a[0]}
        if len(a) > 1:
            kw["Prefix"] = a[1]
        keys = []
        for page in s3.get_paginator("list_objects_v2").paginate(**kw):
            keys += [o["Key"] for o in page.get("Contents", [])]
        return keys
    if cmd == "uploads":
        r = s3.list_multipart_uploads(Bucket=a[0])
        return [{"key": u["Key"], "uploadId": u["UploadId"]} for u in r.get("Uploads", [])]
    if cmd == "parts":
        parts = []
        for page in s3.get_paginator("list_parts").paginate(Bucket=a[0], Key=a[1], UploadId=a[2]):
            parts += [{"number": p["PartNumber"], "size": p["Size"], "etag": p["ETag"]}
                      for p in page.get("Parts", [])]
        return parts
    if cmd == "upload-part":
        body = seeded(int(a[4]), int(a[5]))
        r = s3.upload_part(Bucket=a[0], Key=a[1], UploadId=a[2], PartNumber=int(a[3]), Body=body)
        return {"etag": r["ETag"]}
    if cmd == "abort":
        s3.abort_multipart_upload(Bucket=a[0], Key=a[1], UploadId=a[2])
        return None
    if cmd == "delete":
        s3.delete_object(Bucket=a[0], Key=a[1])
        return None
    raise SystemExit(f"s3_tool.py: unknown command {cmd}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint", required=True)
    p.add_argument("--access-key", required=True)
    p.add_argument("--secret-key", required=True)
    p.add_argument("command")
    p.add_argument("rest", nargs="*")
    args = p.parse_args()
    from botocore.exceptions import ClientError
    try:
        result = run(args)
    except ClientError as e:
        err = e.response.get("Error", {})
        print(f"S3ERROR {err.get('Code')}: {err.get('Message')}", file=sys.stderr)
        sys.exit(3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
