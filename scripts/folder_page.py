"""serve's folder page in headless chromium (Debian's chromium and chromium-driver, driven by selenium), for the
end-to-end tests (Tests/EndToEndTests: ServeFolderPageTests, ServeDurabilityTests, ServeS3StoreTests). One JSON
object on the last line of stdout:

    python3 folder_page.py finish URL PATH                      # choose PATH, wait until its row ends
    python3 folder_page.py restart URL PATH                     # the same; prints "midway" after 8 MiB went up
    python3 folder_page.py reload URL PATH NAME RELOAD_AFTER    # reload midway, choose again, pause, resume, list
"""
import json
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def start():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]:
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def progress(driver, strict=False):
    # strict: the row's progress bar must be there (a missing one fails the script instead of reading as 0).
    if strict:
        return driver.execute_script("return document.querySelector('#uploads progress').value")
    return driver.execute_script("return document.querySelector('#uploads progress')?.value || 0") or 0


def state(driver):
    return driver.find_element(By.CSS_SELECTOR, "#uploads li").get_attribute("data-state")


def wait_for_progress(driver, at_least, seconds=60):
    # A loaded machine starts chromium slowly: the first PATCHes are waited for, not assumed.
    deadline = time.time() + seconds
    while time.time() < deadline and progress(driver) < at_least:
        time.sleep(0.1)


def wait_until_ended(driver, seconds=240):
    deadline, now = time.time() + seconds, None
    while time.time() < deadline:
        now = state(driver)
        if now == "done" or (now or "").startswith("failed"):
            break
        time.sleep(0.25)
    return now


def finish(driver, url, path):
    driver.get(url)
    driver.find_element(By.ID, "picker").send_keys(path)
    return {"final": wait_until_ended(driver)}


def restart(driver, url, path):
    driver.get(url)
    driver.find_element(By.ID, "picker").send_keys(path)
    wait_for_progress(driver, 8 * 1024 * 1024)
    result = {"progress_at_restart": progress(driver)}
    print("midway", flush=True)
    result["final"] = wait_until_ended(driver)
    return result


def reload(driver, url, path, name, reload_after):
    result = {}
    driver.get(url)
    driver.find_element(By.ID, "picker").send_keys(path)
    # Reload once a few PATCHes are through, then a bit later.
    wait_for_progress(driver, 8 * 1024 * 1024)
    time.sleep(float(reload_after))
    result["before_reload"] = state(driver)
    result["progress_before_reload"] = progress(driver, strict=True)
    driver.refresh()
    result["stored_urls"] = driver.execute_script("return Object.keys(localStorage).length")
    driver.find_element(By.ID, "picker").send_keys(path)
    time.sleep(1)
    button = driver.find_element(By.CSS_SELECTOR, "#uploads li button")
    button.click()
    time.sleep(0.5)
    result["paused_state"] = state(driver)
    first = progress(driver, strict=True)
    time.sleep(1.5)
    result["moved_while_paused"] = progress(driver, strict=True) != first
    button.click()
    result["final"] = wait_until_ended(driver)
    driver.get(url)
    result["listed"] = name in [a.text for a in driver.find_elements(By.CSS_SELECTOR, "tbody a")]
    return result


if __name__ == "__main__":
    mode, arguments = sys.argv[1], sys.argv[2:]
    driver = start()
    try:
        result = {"finish": finish, "restart": restart, "reload": reload}[mode](driver, *arguments)
    finally:
        driver.quit()
    print(json.dumps(result), flush=True)
