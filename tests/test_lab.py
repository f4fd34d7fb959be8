"""JupyterLab in a real headless browser: `jupyter lab` on 127.0.0.1 with the project's
kernel, Debian's Chromium driven by Selenium (chromedriver from Debian), notebook 04 opened,
Run All Cells clicked, and the answers found in the page."""

import os
import secrets
import sys

import pytest

from ragkit.testing.launch import free_port, running_http

from .conftest import ROOT

pytestmark = pytest.mark.slow
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
NOTEBOOK = "04_query_and_explain.ipynb"


@pytest.fixture
def workspace(tmp_path):
    """A copy of notebook 04, outputs cleared, in the project's layout (data/ beside it: the
    notebook reads nothing else), so the browser's autosave never touches the committed notebook."""
    import nbformat

    main = tmp_path / "ws" / "main"
    (main / "notebooks").mkdir(parents=True)
    nb = nbformat.read(ROOT / "notebooks" / NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, main / "notebooks" / NOTEBOOK)
    (main / "data").symlink_to(ROOT / "data")
    (main / "outputs").mkdir()
    return main


@pytest.fixture
def lab(workspace, tmp_path):
    port, token = free_port(), secrets.token_hex(16)
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ip", "127.0.0.1",
               "--port", str(port), f"--ServerApp.root_dir={workspace}", f"--IdentityProvider.token={token}",
               "--ServerApp.open_browser=False", "--LabApp.news_url=",
               "--LabApp.expose_app_in_browser=True", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    env = {"JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"), "HF_HUB_OFFLINE": "1"}
    with running_http(command, f"http://127.0.0.1:{port}/api/status?token={token}", timeout=120, env=env,
                      log=tmp_path / "lab.log"):
        yield f"http://127.0.0.1:{port}", token


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    assert os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER), \
        "Debian's chromium and chromium-driver are missing: make install puts them in"
    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", f"--user-data-dir={tmp_path / 'chromium'}", "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def test_jupyterlab_runs_notebook_04_and_shows_the_answers(lab, browser, workspace):
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    url, token = lab
    browser.get(f"{url}/lab/tree/notebooks/{NOTEBOOK}?token={token}")
    wait = WebDriverWait(browser, 180)
    wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, ".jp-NotebookPanel .jp-Cell")))
    # The kernel is the project's: wait until the notebook is the current widget, its kernel is up
    # and idle and Run All is enabled (a slow machine reaches the page long before all three).
    wait.until(_settled)
    assert "In common: 7 diseases" not in browser.page_source     # nothing shown before it runs
    outputs = lambda d: " ".join(e.text for e in d.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output"))  # noqa: E731
    long_wait = WebDriverWait(browser, 600, poll_frequency=2)
    prompts = lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, ".jp-InputPrompt")]  # noqa: E731
    started = lambda d: any("*" in p or p.strip("[]: ").isdigit() for p in prompts(d))  # noqa: E731
    for _ in range(3):                  # a click a busy page loses is clicked again
        browser.find_element(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-Cell").click()   # the notebook has focus
        wait.until(_settled)
        wait.until(ready.element_to_be_clickable(
            (By.XPATH, "//div[contains(@class, 'lm-MenuBar-itemLabel') and normalize-space()='Run']"))).click()
        wait.until(ready.element_to_be_clickable((By.CSS_SELECTOR, "li[data-command='runmenu:run-all']"))).click()
        try:
            WebDriverWait(browser, 60, poll_frequency=2).until(started)
            break
        except TimeoutException:
            continue
    else:
        pytest.fail(f"Run All never started a cell; Lab's state {_lab_state(browser)}")
    try:
        long_wait.until(lambda d: "In common: 7 diseases" in outputs(d))
    except TimeoutException:
        pytest.fail(f"the KG answer never showed; Lab's state {_lab_state(browser)}; prompts {prompts(browser)[:30]}; "
                    f"outputs {outputs(browser)[-2000:]!r}")
    long_wait.until(lambda d: not any("[*]" in p for p in prompts(d)))   # every cell has finished
    text = outputs(browser)
    assert "Tension-Type Headache" in text                # the KG answer's common diseases
    assert "Nobel Prize in Physics" in text               # the graph answer
    assert "Traceback" not in text
    assert len([p for p in prompts(browser) if p.strip("[]: ").isdigit()]) >= 20   # numbered: executed
    assert (workspace / "outputs" / "kg" / "biomed.json.gz").exists()   # the kernel ran in the workspace


_STATE = """
const app = window.jupyterapp;
if (!app) { return null; }
const widget = app.shell.currentWidget;
const session = widget && widget.sessionContext;
const kernel = session && session.session && session.session.kernel;
return {current: widget ? widget.title.label : null, kernel: kernel ? kernel.status : null,
        kernel_name: session ? session.kernelDisplayName : null,
        run_all: app.commands.isEnabled('notebook:run-all-cells'),
        dialogs: Array.from(document.querySelectorAll('.jp-Dialog')).map(d => d.innerText.slice(0, 300))};
"""


def _lab_state(browser):
    """What Lab itself says: the current widget, its kernel's status, whether Run All is enabled
    and any dialog's text (the app is exposed in the page by --LabApp.expose_app_in_browser)."""
    return browser.execute_script(_STATE)


def _settled(browser):
    """True once the notebook is current, its kernel idle and Run All enabled; a dialog Lab opened
    meanwhile (a kernel choice) stands in the way, so it is accepted."""
    from selenium.webdriver.common.by import By

    for button in browser.find_elements(By.CSS_SELECTOR, ".jp-Dialog .jp-mod-accept"):
        button.click()
    state = _lab_state(browser)
    return bool(state) and state["current"] == NOTEBOOK and state["kernel"] == "idle" and state["run_all"]
