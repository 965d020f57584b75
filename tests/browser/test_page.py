"""The page at GET / in a real headless Chromium, against a real gateway and TorchServe.

A drawing is uploaded through the file input; the 17 joints the page draws sit where
/annotate put them; a dragged joint is what the next request carries; two motions come
back as two animated GIFs fetched from the service; a blank page shows an error in words;
on a 390x844 phone screen nothing overflows and every control can be reached; with
API_KEY set the page asks for the key once. More motions than the defaults go through
POST /jobs: a progress bar per motion fills, then the animations show; a job that fails
shows its error in words. A box drawn round one figure of two (a real photo) has the
drawing looked at again only there. Each state is saved to docs/ as a screenshot.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from itertools import pairwise
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pytest
import requests
from PIL import Image
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from animation.crop import CROP_MARGIN
from animation.mask_warnings import WARNINGS
from animation.skeleton import COCO_KEYPOINTS
from animation.sprites import layout_of
from tests.support.gateway_server import gateways
from tests.support.images import drawing, encode
from tests.support.real_photos import real_dev, real_photo
from torchserve.training.evaluate_photos import load_truth

pytestmark = pytest.mark.integration
DOCS = Path(__file__).resolve().parents[2] / "docs"
SCRATCH = Path(tempfile.gettempdir()) / "page-screenshots"
KEY = "page-test-key-0123456789"
# Records what the page sends: each fetch's URL and its form fields (files by name only).
SPY = """
window.sent = [];
const original = window.fetch;
window.fetch = (url, init = {}) => {
  const fields = {};
  if (init.body instanceof FormData) {
    for (const [k, v] of init.body.entries()) fields[k] = typeof v === "string" ? v : v.name;
  }
  window.sent.push({url: String(url), fields, auth: (init.headers || {}).Authorization || null});
  return original(url, init);
};
"""
# Records the progress bars of a job (GET /jobs/<id> answered, the page updated them): after
# each change, every bar's position by its id (-1: waiting, moving; 1: done, full).
BARS = """
window.bars = [];
const seen = {};
new MutationObserver((records) => {
  for (const r of records) {
    const bars = r.type === "attributes" ? [r.target]
      : [...r.addedNodes].flatMap((n) => n.querySelectorAll ? [...n.querySelectorAll("progress")] : []);
    for (const bar of bars) if (bar.tagName === "PROGRESS") seen[bar.id] = bar.position;
  }
  const last = window.bars[window.bars.length - 1];
  if (JSON.stringify(last) !== JSON.stringify(seen)) window.bars.push({...seen});
}).observe(document.getElementById("results"),
           {subtree: true, childList: true, attributes: true, attributeFilter: ["value"]});
"""
# Holds back the page's copy of a finished job's state until the test calls
# window.releaseDone(): the state is the gateway's own, only handed over later, so the
# progress cards stay on the page (not replaced by the animations) while the test reads them.
HOLD_DONE = """
let releaseDone;
const done = new Promise((resolve) => { releaseDone = resolve; });
window.releaseDone = releaseDone;
const asked = window.fetch;
window.fetch = async (url, init) => {
  const reply = await asked(url, init);
  if (!String(url).includes("/jobs/")) return reply;
  const doc = await reply.clone().json().catch(() => ({}));
  if (doc.status === "done") await done;
  return reply;
};
"""


@pytest.fixture(scope="module")
def servers(torchserve_server, tmp_path_factory):
    """Two gateways on the session's TorchServe: an open one and one with API_KEY set."""
    env = {
        "TORCHSERVE_URL": torchserve_server.inference_url,
        "TORCHSERVE_MANAGEMENT_URL": torchserve_server.management_url,
        "STORAGE_URL": f"file://{tmp_path_factory.mktemp('page-gifs')}",
        "RENDER_WORKERS": "2",
        "API_KEY": None,
    }
    with gateways() as start:
        yield start(env, ready=True), start({**env, "API_KEY": KEY}, ready=True)


@pytest.fixture(scope="module")
def gateway(servers):
    return servers[0]


@pytest.fixture(scope="module")
def drawing_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("upload") / "drawing.png"
    path.write_bytes(encode(drawing(41, size=(900, 700)).image))
    return path


def wait(driver, condition, timeout: float = 60):
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(lambda d: condition(d))


def open_page(driver, url: str) -> None:
    driver.get(url + "/")
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "[data-testid=motion]")) >= 4)
    driver.execute_script(SPY)


def upload(driver, path: Path) -> None:
    driver.find_element(By.CSS_SELECTOR, "[data-testid=file]").send_keys(str(path))


def press_only(driver, names) -> None:
    """Exactly the motions `names` pressed."""
    for button in driver.find_elements(By.CSS_SELECTOR, "[data-testid=motion]"):
        if (button.get_attribute("aria-pressed") == "true") != (button.get_attribute("data-name") in names):  # fmt: skip
            button.click()


def logged(server, method: str, path_prefix: str, since: int = 0) -> list[dict]:
    """The gateway's request log lines (JSON) of `method` on paths from `path_prefix`,
    after the first `since` characters of its log."""
    lines = [json.loads(line) for line in server.log_text()[since:].splitlines()
             if line.startswith("{")]  # fmt: skip
    return [e for e in lines if e.get("method") == method
            and str(e.get("path", "")).startswith(path_prefix)]  # fmt: skip


def results_loaded(count: int):
    """The condition: `count` animations shown, each image loaded."""
    return lambda d: (
        len(d.find_elements(By.CSS_SELECTOR, "[data-testid=result] img")) == count
        and d.execute_script("return [...document.querySelectorAll('[data-testid=result] img')]"
                             ".every(i => i.complete && i.naturalWidth > 0)")
    )  # fmt: skip


def joints(driver) -> dict[str, np.ndarray]:
    """Each joint's centre on screen, in the image's pixels (from the photo's own box)."""
    return driver.execute_script("""
        const photo = document.getElementById('photo').getBoundingClientRect();
        const svg = document.getElementById('overlay').viewBox.baseVal;
        const out = {};
        for (const j of document.querySelectorAll('[data-testid=joint]')) {
          const r = j.getBoundingClientRect();
          out[j.dataset.name] = [(r.left + r.width / 2 - photo.left) * svg.width / photo.width,
                                 (r.top + r.height / 2 - photo.top) * svg.height / photo.height];
        }
        return out;""")  # fmt: skip


def joints_shown(driver) -> bool:
    return len(driver.find_elements(By.CSS_SELECTOR, "[data-testid=joint]")) == 17


def csp_violations(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e["message"]]  # fmt: skip


def screenshot(driver, name: str) -> None:
    """Into docs/ with UPDATE_SCREENSHOTS=1 (the README shows them), else a scratch folder,
    so a test run leaves the checkout as it was (an animation is caught mid-frame)."""
    folder = DOCS if os.environ.get("UPDATE_SCREENSHOTS") else SCRATCH
    folder.mkdir(exist_ok=True)
    assert driver.save_screenshot(str(folder / name))
    assert Image.open(folder / name).size[0] >= 390


def test_upload_fix_a_joint_and_animate(browser, gateway, drawing_file):
    browser.set_window_size(1100, 1300)
    open_page(browser, gateway.url)
    pressed = browser.find_elements(By.CSS_SELECTOR, "[data-testid=motion][aria-pressed=true]")
    assert len(pressed) >= 2  # the defaults come pressed
    upload(browser, drawing_file)
    wait(browser, joints_shown)
    expected = requests.post(f"{gateway.url}/annotate", data=drawing_file.read_bytes(),
                             headers={"Content-Type": "image/png"}, timeout=60).json()  # fmt: skip
    side = max(expected["image"]["width"], expected["image"]["height"])
    shown = joints(browser)
    assert sorted(shown) == sorted(COCO_KEYPOINTS)
    for name, point in zip(COCO_KEYPOINTS, expected["keypoints"], strict=True):
        assert np.linalg.norm(np.subtract(shown[name], point[:2])) < 0.05 * side, name
    outline = browser.find_element(By.CSS_SELECTOR, "[data-testid=outline]")
    assert outline.size["width"] > 100 and outline.is_displayed()
    screenshot(browser, "page-annotated.png")

    # Drag the left wrist 40 px right and 30 px up on screen; the skeleton follows.
    wrist = browser.find_element(By.CSS_SELECTOR, "[data-testid=joint][data-name=left_wrist]")
    scale = browser.execute_script(
        "return document.getElementById('overlay').viewBox.baseVal.width /"
        " document.getElementById('photo').getBoundingClientRect().width"
    )
    ActionChains(browser).click_and_hold(wrist).move_by_offset(20, -15).move_by_offset(
        20, -15
    ).release().perform()
    moved = joints(browser)["left_wrist"]
    target = np.add(expected["keypoints"][9][:2], np.multiply((40, -30), scale))
    assert np.linalg.norm(moved - target) < 0.01 * side
    bone = browser.find_element(By.CSS_SELECTOR, "[data-bone='7-9']")
    assert float(bone.get_attribute("x2")) == pytest.approx(moved[0], abs=1)

    # Exactly two motions, then Animate.
    press_only(browser, ("dab", "zombie"))
    browser.find_element(By.CSS_SELECTOR, "[data-testid=animate]").click()
    wait(browser, results_loaded(2))
    sent = browser.execute_script("return window.sent.filter(s => s.url.endsWith('/animate'))")
    assert len(sent) == 1
    fields = sent[0]["fields"]
    assert fields["motions"] == "dab,zombie" and fields["format"] == "gif"
    keypoints = np.asarray(json.loads(fields["keypoints"]))
    assert np.linalg.norm(keypoints[9] - moved) < 1  # the moved joint, where it was dropped
    others = np.delete(np.arange(17), 9)
    np.testing.assert_allclose(keypoints[others], np.asarray(expected["keypoints"])[others, :2])
    assert json.loads(fields["mask"]) == expected["mask"]  # not painted: sent back as it came
    for result in browser.find_elements(By.CSS_SELECTOR, "[data-testid=result]"):
        src = result.find_element(By.TAG_NAME, "img").get_attribute("src")
        link = result.find_element(By.TAG_NAME, "a")
        assert src.startswith(f"{gateway.url}/files/") and link.get_attribute("href") == src
        gif = Image.open(io.BytesIO(requests.get(src, timeout=10).content))
        assert gif.format == "GIF" and gif.is_animated and gif.n_frames > 5
    assert not csp_violations(browser)
    browser.execute_script("document.getElementById('results-section').scrollIntoView()")
    screenshot(browser, "page-results.png")


def test_paint_adds_to_the_outline(browser, gateway, drawing_file):
    open_page(browser, gateway.url)
    upload(browser, drawing_file)
    wait(browser, joints_shown)
    browser.find_element(By.CSS_SELECTOR, ".tool[data-tool=paint]").click()
    overlay = browser.find_element(By.ID, "overlay")
    # A stroke along the top of the photo, away from the figure.
    top_left = -overlay.size["width"] // 2 + 20, -overlay.size["height"] // 2 + 20
    ActionChains(browser).move_to_element_with_offset(overlay, *top_left).click_and_hold().move_by_offset(
        80, 0
    ).release().perform()  # fmt: skip
    browser.find_element(By.CSS_SELECTOR, "[data-testid=animate]").click()
    wait(browser, lambda d: d.execute_script(
        "return window.sent.some(s => s.url.endsWith('/animate'))"))  # fmt: skip
    sent = browser.execute_script("return window.sent.filter(s => s.url.endsWith('/animate'))")
    mask = json.loads(sent[0]["fields"]["mask"])
    assert mask["box"][1] < 40  # the painted stroke is part of the outline sent
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=result] img"))


def test_a_page_without_a_figure_shows_an_error_in_words(browser, gateway, tmp_path):
    blank = tmp_path / "blank.png"
    blank.write_bytes(encode(np.full((500, 400, 3), 250, np.uint8)))
    open_page(browser, gateway.url)
    upload(browser, blank)
    error = browser.find_element(By.CSS_SELECTOR, "[data-testid=error]")
    wait(browser, lambda d: error.is_displayed())
    assert "No drawn figure was found" in error.text
    assert not joints_shown(browser)
    screenshot(browser, "page-error.png")


def test_a_phone_screen_fits_and_every_control_is_reachable(browser, gateway, drawing_file):
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})  # fmt: skip
    browser.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True})
    try:
        open_page(browser, gateway.url)
        assert browser.execute_script("return innerWidth") == 390
        upload(browser, drawing_file)
        wait(browser, joints_shown)
        screenshot(browser, "page-phone.png")
        assert browser.execute_script(
            "return document.documentElement.scrollWidth") <= 390  # fmt: skip
        wide = browser.execute_script("""
            return [...document.querySelectorAll('body *')].filter(e => {
              const r = e.getBoundingClientRect();
              return r.width && (r.left < -1 || r.right > innerWidth + 1)
                && !e.classList.contains('visually-hidden');
            }).map(e => e.id || e.tagName);""")  # fmt: skip
        assert wide == []
        controls = ["label.button", "[data-testid=joint]", ".tool", "#brush", "#reset",
                    "[data-testid=motion]", "#format", "[data-testid=animate]"]  # fmt: skip
        for selector in controls:
            for element in browser.find_elements(By.CSS_SELECTOR, selector):
                reachable = browser.execute_script("""
                    const e = arguments[0];
                    e.scrollIntoView({block: 'center'});
                    const r = e.getBoundingClientRect();
                    const x = r.left + r.width / 2, y = r.top + r.height / 2;
                    const top = document.elementFromPoint(x, y);
                    return r.width > 0 && x > 0 && x < innerWidth && y > 0 && y < innerHeight
                      && (top === e || e.contains(top) || top.closest('label') === e
                          // joints may overlap (eyes by the nose): one drags off the other
                          || (e.matches('.joint') && top.matches('.joint')));""", element)  # fmt: skip
                assert reachable, selector
    finally:
        browser.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": False})
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_with_an_api_key_the_page_asks_once(browser, servers, drawing_file):
    locked = servers[1]
    assert requests.get(f"{locked.url}/", timeout=5).status_code == 200  # no key for the page
    assert requests.get(f"{locked.url}/static/app.js", timeout=5).status_code == 200
    open_page(browser, locked.url)
    browser.execute_script("sessionStorage.clear()")
    upload(browser, drawing_file)
    form = browser.find_element(By.ID, "key-form")
    wait(browser, lambda d: form.is_displayed())
    assert "API key" in browser.find_element(By.CSS_SELECTOR, "[data-testid=error]").text
    browser.find_element(By.ID, "key").send_keys(KEY)
    browser.find_element(By.CSS_SELECTOR, "#key-form button").click()
    wait(browser, joints_shown)  # the upload went again, with the key
    browser.find_element(By.CSS_SELECTOR, "[data-testid=animate]").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=result] img"))
    assert not form.is_displayed()  # asked once
    sent = browser.execute_script("return window.sent")
    assert [s["auth"] for s in sent if s["url"].endswith(("/annotate", "/animate"))] == [
        None, f"Bearer {KEY}", f"Bearer {KEY}"]  # fmt: skip


def test_the_page_carries_its_security_headers(gateway):
    page = requests.get(f"{gateway.url}/", timeout=5)
    assert page.headers["Content-Type"].startswith("text/html")
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy
    assert "frame-ancestors 'none'" in policy and "blob:" in policy
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert page.headers["Referrer-Policy"] == "no-referrer"
    assert "<script>" not in page.text  # no inline script, so nothing to hash
    api = requests.get(f"{gateway.url}/motions", timeout=5)
    assert api.status_code == 200 and api.headers["Content-Type"] == "application/json"
    assert api.headers["Content-Security-Policy"].startswith("default-src 'none'")


def test_a_real_phone_photo(browser, gateway):
    """A 3024x4032 phone photo of a real child's drawing (AnimatedDrawings' example, beside
    the checkout): the joints land where /annotate put them, and it animates."""
    photo = real_dev("char4", "original_img.png")
    browser.set_window_size(1100, 1300)
    open_page(browser, gateway.url)
    upload(browser, photo)
    wait(browser, joints_shown)
    expected = requests.post(f"{gateway.url}/annotate", data=photo.read_bytes(),
                             headers={"Content-Type": "image/png"}, timeout=60).json()  # fmt: skip
    assert expected["image"] == {"width": 3024, "height": 4032}
    shown = joints(browser)
    for name, point in zip(COCO_KEYPOINTS, expected["keypoints"], strict=True):
        assert np.linalg.norm(np.subtract(shown[name], point[:2])) < 0.05 * 4032, name
    browser.execute_script("document.getElementById('edit').scrollIntoView()")
    screenshot(browser, "page-real.png")
    press_only(browser, ("wave_hello",))
    browser.find_element(By.CSS_SELECTOR, "[data-testid=animate]").click()
    wait(browser, results_loaded(1))
    assert not csp_violations(browser)
    browser.execute_script("document.getElementById('animate-section').scrollIntoView()")
    screenshot(browser, "page-real-results.png")


def test_a_sprite_sheet_comes_with_its_layout(browser, gateway, drawing_file):
    browser.set_window_size(1100, 1300)
    open_page(browser, gateway.url)
    upload(browser, drawing_file)
    wait(browser, joints_shown)
    press_only(browser, ("dab",))
    Select(browser.find_element(By.ID, "format")).select_by_value("sprites")
    browser.find_element(By.CSS_SELECTOR, "[data-testid=animate]").click()
    wait(browser, results_loaded(1))
    result = browser.find_element(By.CSS_SELECTOR, "[data-testid=result]")
    sheet = requests.get(result.find_element(By.TAG_NAME, "img").get_attribute("src"), timeout=10)
    assert sheet.headers["Content-Type"] == "image/png"
    layout_link = result.find_element(By.CSS_SELECTOR, "[data-testid=layout]")
    assert layout_link.get_attribute("download") == "dab.json"
    layout = requests.get(layout_link.get_attribute("href"), timeout=10).json()
    assert layout == layout_of(sheet.content)
    assert not csp_violations(browser)


def test_the_motions_come_by_group_with_previews_and_one_of_each_animates(
    browser, gateway, drawing_file
):
    browser.set_window_size(1100, 1300)
    open_page(browser, gateway.url)
    upload(browser, drawing_file)
    wait(browser, joints_shown)
    groups = browser.find_elements(By.CSS_SELECTOR, "[data-testid=motion-group]")
    assert [g.get_attribute("data-group") for g in groups] == [
        "dance",
        "everyday",
        "sport",
        "silly",
    ]
    wait(browser, lambda d: d.execute_script(
        "return [...document.querySelectorAll('[data-testid=preview]')]"
        ".every(i => i.complete && i.naturalWidth > 0)"))  # fmt: skip
    chosen = []
    for group in groups:
        buttons = group.find_elements(By.CSS_SELECTOR, "[data-testid=motion]")
        assert buttons and all(b.find_element(By.TAG_NAME, "img") for b in buttons)
        chosen.append(buttons[-1].get_attribute("data-name"))  # not a default: the last
    press_only(browser, chosen)
    browser.find_element(By.CSS_SELECTOR, "[data-testid=animate]").click()
    wait(browser, results_loaded(4))
    shown = [
        r.get_attribute("data-name")
        for r in browser.find_elements(By.CSS_SELECTOR, "[data-testid=result]")
    ]
    assert sorted(shown) == sorted(chosen)
    # Four motions (as many as the defaults) are a short request: /animate, no job.
    urls = browser.execute_script("return window.sent.map(s => s.url)")
    assert sum(u.endswith("/animate") for u in urls) == 1
    assert not [u for u in urls if "/jobs" in u]
    assert not csp_violations(browser)
    browser.execute_script("document.getElementById('animate-section').scrollIntoView()")
    screenshot(browser, "page-motions.png")


def test_many_motions_go_through_a_job_with_a_progress_bar_each(browser, gateway, drawing_file):
    browser.set_window_size(1100, 1300)
    open_page(browser, gateway.url)
    upload(browser, drawing_file)
    wait(browser, joints_shown)
    names = [b.get_attribute("data-name")
             for b in browser.find_elements(By.CSS_SELECTOR, "[data-testid=motion]")]  # fmt: skip
    assert len(names) > 4
    press_only(browser, names)  # every motion: more than the defaults' four is long
    browser.execute_script(BARS)
    browser.execute_script(HOLD_DONE)  # the job may finish before the cards are read
    log_start = len(gateway.log_text())
    browser.find_element(By.CSS_SELECTOR, "[data-testid=animate]").click()

    # A card per motion at once, each with a progress bar labelled with the motion's name.
    cards = "[data-testid=job-motion]"
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, cards)) == len(names))
    for card in browser.find_elements(By.CSS_SELECTOR, cards):
        bar = card.find_element(By.TAG_NAME, "progress")
        assert bar.aria_role == "progressbar"
        assert bar.accessible_name == card.get_attribute("data-name").replace("_", " ")
    browser.execute_script("window.releaseDone()")
    # Caught mid-way where the timing allows (the assertions below do not depend on it).
    try:
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".pending.done")
             and d.find_elements(By.CSS_SELECTOR, ".pending:not(.done)"), timeout=30)  # fmt: skip
        screenshot(browser, "page-progress.png")
    except TimeoutException:
        pass
    wait(browser, results_loaded(len(names)), timeout=240)

    # The bars: all waiting at first, each filled once and for good, some before others.
    bars = browser.execute_script("return window.bars")
    ids = {f"progress-{n}" for n in names}
    assert set(bars[0]) == ids and set(bars[0].values()) == {-1}
    assert set(bars[-1]) == ids and set(bars[-1].values()) == {1}
    for before, after in pairwise(bars):
        assert all(after[i] >= before[i] for i in ids), (before, after)
    assert any(0 < list(b.values()).count(1) < len(ids) for b in bars), bars

    shown = [r.get_attribute("data-name")
             for r in browser.find_elements(By.CSS_SELECTOR, "[data-testid=result]")]  # fmt: skip
    assert sorted(shown) == sorted(names)
    for result in browser.find_elements(By.CSS_SELECTOR, "[data-testid=result]"):
        src = result.find_element(By.TAG_NAME, "img").get_attribute("src")
        assert src.startswith(f"{gateway.url}/files/")
    assert not browser.find_elements(By.CSS_SELECTOR, cards)
    assert browser.find_element(By.ID, "status").text == ""
    assert not browser.find_element(By.CSS_SELECTOR, "[data-testid=error]").is_displayed()

    # The page sent /animate's form to POST /jobs, then asked GET /jobs/<id>; no /animate.
    sent = browser.execute_script("return window.sent")
    posted = [s for s in sent if s["url"].endswith("/jobs")]
    assert len(posted) == 1 and not [s for s in sent if s["url"].endswith("/animate")]
    fields = posted[0]["fields"]
    assert fields["motions"] == ",".join(names) and fields["format"] == "gif"
    assert set(fields) == {"image", "motions", "format", "bbox", "keypoints", "mask"}
    asked = {s["url"] for s in sent if "/jobs/" in s["url"]}
    assert len(asked) == 1
    # The gateway saw the same: one 202 to POST /jobs, polls of that job, no POST /animate.
    assert [e["status"] for e in logged(gateway, "POST", "/jobs", log_start)] == [202]
    polls = logged(gateway, "GET", "/jobs/", log_start)
    assert len(polls) >= 2 and {e["path"] for e in polls} == {urlparse(asked.pop()).path}
    assert len(polls) < 200  # polled every half second or so, not in a tight loop
    assert not logged(gateway, "POST", "/animate", log_start)
    assert not csp_violations(browser)


def test_a_job_that_fails_shows_its_error_in_words(
    browser, torchserve_server, gateway_factory, drawing_file, tmp_path
):
    """Storage that breaks after the gateway started: the job fails (storage_unavailable,
    no second try) and the page says so as it says /animate's errors."""
    storage = tmp_path / "animations"
    storage.mkdir()
    broken = gateway_factory(
        {
            "TORCHSERVE_URL": torchserve_server.inference_url,
            "TORCHSERVE_MANAGEMENT_URL": torchserve_server.management_url,
            "STORAGE_URL": f"file://{storage}",
            "RENDER_WORKERS": "1",
            "JOB_MAX_TRIES": "1",
            "API_KEY": None,
        },
        ready=True,
    )
    open_page(browser, broken.url)
    upload(browser, drawing_file)
    wait(browser, joints_shown)
    storage.rename(tmp_path / "gone")
    storage.write_bytes(b"not a folder")
    press_only(browser, ["dab", "zombie", "jumping", "wave_hello", "clap", "cheer"])
    browser.find_element(By.CSS_SELECTOR, "[data-testid=animate]").click()
    error = browser.find_element(By.CSS_SELECTOR, "[data-testid=error]")
    wait(browser, lambda d: error.is_displayed(), timeout=120)
    assert error.text == "The animations could not be stored. Try again in a minute."
    assert not browser.find_element(By.ID, "results-section").is_displayed()
    assert browser.find_element(By.ID, "status").text == ""
    assert browser.find_element(By.CSS_SELECTOR, "[data-testid=animate]").is_enabled()
    urls = browser.execute_script("return window.sent.map(s => s.url)")
    assert [u for u in urls if u.endswith("/jobs")] and not [u for u in urls if u.endswith("/animate")]  # fmt: skip
    assert not csp_violations(browser)


def test_a_box_drawn_round_one_figure_of_two_looks_again_only_there(browser, gateway):
    """Real photo 15 (a comic cover, beside the checkout): two figures one above the other,
    answered as one with the warning `several_figures`. With the Box tool the person drags
    a box round the upper one: the page asks /annotate again with that box, and shows
    joints inside it and no such warning."""
    truth = next(t for t in load_truth() if t.name == "15")
    photo = real_photo(truth.photo)
    browser.set_window_size(1100, 1300)
    open_page(browser, gateway.url)
    upload(browser, photo)
    wait(browser, joints_shown)
    several = f"Check the outline: {WARNINGS['several_figures']}."
    assert several in warnings_shown(browser)

    rows, cols = np.nonzero(truth.figure(2))  # the upper figure
    height, width = truth.labels.shape
    box = np.array([cols.min() - 10, rows.min() - 10, cols.max() + 10, rows.max() + 10])
    photo_rect = browser.execute_script(
        "const r = document.getElementById('photo').getBoundingClientRect();"
        "return [r.width, r.height];"
    )
    to_screen = np.divide(photo_rect, (width, height))
    centre = np.divide(photo_rect, 2)
    start = box[:2] * to_screen - centre  # offsets from the overlay's centre
    end = box[2:] * to_screen - centre
    browser.find_element(By.CSS_SELECTOR, ".tool[data-tool=box]").click()
    overlay = browser.find_element(By.ID, "overlay")
    ActionChains(browser).move_to_element_with_offset(overlay, *start.astype(int)).click_and_hold().move_by_offset(
        *(end - start).astype(int) // 2
    ).move_by_offset(*(end - start).astype(int) // 2).release().perform()  # fmt: skip
    wait(browser, lambda d: d.execute_script(
        "return window.sent.filter(s => s.url.endsWith('/annotate')).length") == 2)  # fmt: skip
    sent = browser.execute_script("return window.sent.filter(s => s.url.endsWith('/annotate'))")
    assert "bbox" not in sent[0]["fields"]  # the upload: the detector's box
    asked = np.asarray(json.loads(sent[1]["fields"]["bbox"]))
    assert np.abs(asked - box).max() < 0.02 * height, (asked, box)
    wait(browser, lambda d: several not in warnings_shown(d) and joints_shown(d))
    shown = np.asarray(list(joints(browser).values()))
    margin = CROP_MARGIN * (asked[2:] - asked[:2])  # the crop's margin round a box
    assert (shown >= asked[:2] - margin).all() and (shown <= asked[2:] + margin).all(), shown
    drawn = browser.find_element(By.CSS_SELECTOR, "#overlay .box")
    assert float(drawn.get_attribute("x")) == pytest.approx(asked[0], abs=1)
    assert browser.find_element(By.CSS_SELECTOR, ".tool[data-tool=joints]").get_attribute(
        "aria-pressed") == "true"  # fmt: skip
    assert not csp_violations(browser)  # no screenshot: the real photos stay out of docs/


def warnings_shown(driver) -> list[str]:
    # Read in one script: the list is replaced whole when an answer comes.
    return driver.execute_script(
        "return [...document.querySelectorAll('#warnings li')].map(li => li.textContent)"
    )
