"""Drives the play page in headless Chromium: for the tests and for the
screenshot of docs/pages/play.md (`experiments/play.py --screenshot`).

Needs selenium (the `test` extra) and Debian's `chromium` and
`chromium-driver` packages; Selenium is pointed at those executables, so its
driver manager never downloads anything.
"""

import contextlib
import os
import shutil
import tempfile
import time

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
INSTALL = ("apt-get install chromium chromium-driver, and pip install -e "
           "\".[test]\" for selenium")
# Headless, and nothing that reaches out to the network: on a closed network
# Chromium otherwise hangs on its background connections.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage")


def missing():
  """Why no browser can be driven here (with how to install one), or None."""
  absent = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
  try:
    import selenium  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError:
    absent.append("the selenium package")
  if absent:
    return f"no {', '.join(absent)}; install with: {INSTALL}"
  return None


@contextlib.contextmanager
def chromium(width=1280, height=900):
  """A headless Chromium WebDriver with a fresh profile, quit on exit."""
  from selenium import webdriver  # pylint: disable=g-import-not-at-top
  from selenium.webdriver.chrome.service import Service  # pylint: disable=g-import-not-at-top
  profile = tempfile.mkdtemp(prefix="mccfrb-play-chromium-")
  options = webdriver.ChromeOptions()
  options.binary_location = CHROMIUM
  for flag in FLAGS + (f"--user-data-dir={profile}",
                       f"--window-size={width},{height}"):
    options.add_argument(flag)
  driver = None
  try:
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER),
                              options=options)
    driver.set_page_load_timeout(30)
    yield driver
  finally:
    if driver is not None:
      driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def answered(driver):
  """How many API requests the page has finished (its data-answered)."""
  value = driver.find_element("tag name", "body").get_attribute(
      "data-answered")
  return int(value or 0)


def click(driver, element, timeout=15.0):
  """Clicks `element` and waits until the page has handled the answer."""
  before = answered(driver)
  element.click()
  wait(driver, lambda: answered(driver) > before, timeout)


def wait(driver, condition, timeout=15.0):
  """Polls `condition()` until it is true; TimeoutError after `timeout` s."""
  del driver
  deadline = time.monotonic() + timeout
  while not condition():
    if time.monotonic() > deadline:
      raise TimeoutError("the page did not answer in time")
    time.sleep(0.02)


def open_page(driver, url):
  """Loads the page and waits for its first answer from the server."""
  driver.get(url)
  wait(driver, lambda: answered(driver) >= 1)


def action_buttons(driver):
  return driver.find_elements("css selector", "#actions button.action")


def deal(driver):
  """Clicks "Deal the next hand"."""
  click(driver, driver.find_element("id", "next-hand"))


def play_hand(driver, choose=lambda buttons: buttons[-1], on_turn=None):
  """Deals a hand and clicks `choose(action buttons)` until it is over.

  `on_turn(driver)`, when given, is called at each of the person's turns
  before the click.
  """
  deal(driver)
  while True:
    buttons = action_buttons(driver)
    if not buttons:
      return
    if on_turn is not None:
      on_turn(driver)
    click(driver, choose(buttons))


def screenshot(driver, path):
  """Saves a PNG of the whole page, below the window's fold too."""
  import base64  # pylint: disable=g-import-not-at-top
  size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
  shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
      "format": "png", "captureBeyondViewport": True,
      "clip": {"x": 0, "y": 0, "width": size["width"],
               "height": size["height"], "scale": 1}})
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, "wb") as f:
    f.write(base64.b64decode(shot["data"]))
