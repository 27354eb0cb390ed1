"""Headless Chromium through the localized hosted pages: Arabic (right to left) from the browser's languages,
Japanese from `ui_locales` and from the browser's languages."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from conftest import DEMO_USER, authorize_url, new_chrome, pkce_pair

REDIRECT = "http://127.0.0.1:9/callback"

# The catalog's texts (Server/Sources/LatchkeyServer/Localization/Catalog/ar.swift, ja.swift).
ARABIC = {"title": "تسجيل الدخول", "username": "البريد الإلكتروني أو اسم المستخدم", "password": "كلمة المرور",
          "wrong": "البريد الإلكتروني أو كلمة المرور غير صحيحة."}
JAPANESE = {"title": "サインイン", "username": "メールアドレスまたはユーザー名", "password": "パスワード",
            "wrong": "メールアドレスまたはパスワードが正しくありません。"}


@pytest.fixture
def make_browser():
    """Chromium with a given language list (`--lang` and the `intl.accept_languages` preference, which is what
    Chromium puts in `Accept-Language`)."""
    drivers = []

    def make(languages=None):
        driver = new_chrome(languages)
        drivers.append(driver)
        return driver

    yield make
    for driver in drivers:
        driver.quit()


def open_login(browser, server, **extra):
    _, challenge = pkce_pair()
    browser.get(authorize_url(server, REDIRECT, challenge, "l10n", **extra))
    WebDriverWait(browser, 10).until(expected_conditions.presence_of_element_located((By.ID, "username")))


def assert_page(browser, lang, direction, texts):
    html = browser.find_element(By.TAG_NAME, "html")
    assert html.get_attribute("lang") == lang
    assert html.get_attribute("dir") == direction
    assert browser.find_element(By.TAG_NAME, "h1").text == texts["title"]
    assert browser.find_element(By.CSS_SELECTOR, "label[for=username]").text == texts["username"]
    assert browser.find_element(By.CSS_SELECTOR, "label[for=password]").text == texts["password"]
    assert browser.find_element(By.ID, "submit").text == texts["title"]


def submit_wrong_password(browser):
    browser.find_element(By.ID, "username").send_keys(DEMO_USER)
    browser.find_element(By.ID, "password").send_keys("wrong password")
    browser.find_element(By.ID, "submit").click()
    return WebDriverWait(browser, 10).until(expected_conditions.visibility_of_element_located((By.ID, "form-error")))


# Where the heading's text sits inside the card: for a right-to-left page it must hug the right edge.
TEXT_EDGES = """
const main = document.querySelector('main').getBoundingClientRect();
const range = document.createRange();
range.selectNodeContents(document.querySelector('h1'));
const text = range.getBoundingClientRect();
const style = getComputedStyle(document.querySelector('main'));
return {direction: style.direction, left: text.left - main.left, right: main.right - text.right};
"""


def test_arabic_from_the_browser_languages_is_right_to_left(make_browser, server):
    browser = make_browser("ar,en;q=0.5")
    open_login(browser, server)
    assert_page(browser, "ar", "rtl", ARABIC)
    edges = browser.execute_script(TEXT_EDGES)
    assert edges["direction"] == "rtl"
    assert edges["right"] < edges["left"], f"the Arabic heading should start on the right: {edges}"
    alert = submit_wrong_password(browser)
    assert alert.text == ARABIC["wrong"]
    assert_page(browser, "ar", "rtl", ARABIC)


def test_japanese_from_ui_locales_beats_the_browser(make_browser, server):
    browser = make_browser("en-US,en")
    open_login(browser, server, ui_locales="ja")
    assert_page(browser, "ja", "ltr", JAPANESE)
    edges = browser.execute_script(TEXT_EDGES)
    assert edges["left"] < edges["right"], f"a left-to-right heading starts on the left: {edges}"
    assert submit_wrong_password(browser).text == JAPANESE["wrong"]
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "ja"


def test_japanese_from_the_browser_languages(make_browser, server):
    browser = make_browser("ja,en-US;q=0.8")
    open_login(browser, server)
    assert_page(browser, "ja", "ltr", JAPANESE)
    assert submit_wrong_password(browser).text == JAPANESE["wrong"]
