"""``make docs-check``: run the shell examples in README.md and docs/**/*.md, and check that
each one still prints what the page shows.

The convention, for whoever writes a page:

- A fenced ``console`` block is run. A line that starts with ``$ `` is a command (a line
  ending in ``\\`` continues on the next line); the lines after it, up to the next command
  or the end of the block, are what it prints: stdout and stderr together, as a terminal
  shows them. A command may pipe (``| head -n 3``, ``| python tools/pick.py KEY...``).
- A fenced ``bash`` block is shown and listed, never run: servers, long builds, benchmarks,
  anything that cannot finish in about a minute on the bundled data.
- ``sh``/``shell`` fences are refused, so every command is one or the other.
- A code span in a table row that is a ``ragkit`` command with options (``ragkit ask ...
  --no-llm``, not a bare name such as ``ragkit kg build``) must be the start of a command
  that a ``console`` block of the same page runs, so a table cannot show an untested
  example.

How the examples run: each page in a fresh scratch copy of the repository (the files git
tracks, and new files git does not ignore; ``outputs/`` as a fresh checkout has it), its
blocks in page order, so a page reads as a script from a fresh checkout. Each command runs
with ``bash -c`` from the copy's root, with this Python's ``bin`` first on PATH (the
venv's ``ragkit``), this checkout's code first on PYTHONPATH, ``HF_HUB_OFFLINE=1``, and
``../shared`` linked beside the copy when the checkout has one (``$RAGKIT_SHARED``
overrides). ``RAGKIT_*``, ``CHROMA_URL`` and ``NEO4J_*`` are cleared: a page shows the
defaults unless a command sets one itself, but for the model: ``RAGKIT_GGUF`` is
``smollm2-135m``, the one every setup has, so that a page prints the same whether or not the
1.5B is installed (its tokenizer sizes the lexical context even with ``--no-llm``).

Outputs are compared after masking what genuinely varies from run to run: durations
(``0.0062 s``, ``12 ms``), ``timings`` dictionaries, keys that hold a time or a rate
(``qps``, ``*_s``, ``*_ms``, ``seconds``), run timestamps, process ids, addresses and
paths under ``/tmp``. Lines that a third-party library prints on every run and that say
nothing about ragkit (the Jupyter kernel's transport warning) are dropped.

``--update`` writes each command's real output into its block (blocks whose output
matches after masking are left as they are, so timings do not churn), for review with
``git diff``.

    python tools/docs_check.py                  # README.md and docs/**/*.md
    python tools/docs_check.py README.md        # one page
    python tools/docs_check.py --update         # rewrite the outputs that changed
    python tools/docs_check.py --list           # every command, run or listed
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_LANG, LIST_LANG = "console", "bash"
REFUSED_LANGS = {"sh", "shell", "zsh", "shell-session", "shellsession"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)\s*$")
TABLE_COMMAND = re.compile(r"`(ragkit\s[^`]*\s--[^`]*)`")
# Where the scratch copy's root appears in an output, a reader sees their checkout.
CHECKOUT = "/path/to/ragkit"
CLEARED_ENV = re.compile(r"^(RAGKIT_|NEO4J_|CHROMA_URL$)")

_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
MASKS: list[tuple[re.Pattern, str]] = [
    (re.compile(r"/tmp/[^\s'\",;)\]}]*"), "/tmp/…"),
    (re.compile(r"\b\d{8}T\d{6,}Z\b"), "<time>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (re.compile(r"\bpid \d+"), "pid N"),
    (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x…"),
    # A key that holds a time or a rate, in JSON, Python reprs and "key: value" lines.
    (re.compile(r"(\b(?:qps|seconds\w*|duration\w*|ms_per_question|[\w@]*_s|[\w@]*_ms)\b[\"']?\s*[:=]\s*)"
                + _NUMBER), r"\1N"),
    (re.compile(r"\b\d+\.\d+ ?s\b"), "N s"),
    (re.compile(r"\b\d+(?:\.\d+)? ?ms\b"), "N ms"),
]
TIMINGS = re.compile(r"(timings(?:_ms)?(?: \(ms\))?[\"']?:?\s*)(\{[^{}]*\})")


def sanitize(text: str) -> list[str]:
    """The lines of ``text`` with what varies between runs masked (see the module doc)."""
    lines = []
    for line in text.splitlines():
        line = TIMINGS.sub(lambda m: m.group(1) + re.sub(_NUMBER, "N", m.group(2)), line)
        for pattern, repl in MASKS:
            line = pattern.sub(repl, line)
        lines.append(line.rstrip())
    return _trim(lines)


def _trim(lines: list[str]) -> list[str]:
    lines = list(lines)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


@dataclass
class Command:
    page: Path
    line: int                 # 1-based line of its "$ " line
    text: str                 # as bash reads it
    output: list[str]         # the lines the page shows
    out_start: int            # 0-based line index of its first output line
    out_end: int              # exclusive
    indent: str
    run: bool                 # console (run) or bash (listed)

    @property
    def where(self) -> str:
        return f"{_rel(self.page)}:{self.line}"

    @property
    def one_line(self) -> str:
        return " ".join(self.text.replace("\\\n", " ").split())


@dataclass
class Page:
    path: Path
    lines: list[str]
    commands: list[Command] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    table_commands: list[tuple[int, str]] = field(default_factory=list)   # (line, command)


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _dedent(line: str, indent: str) -> str:
    return line[len(indent):] if line.startswith(indent) else line.lstrip()


def parse(path: Path) -> Page:
    """The commands of a markdown page: run (``console``) and listed (``bash``)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = Page(path, lines)
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].lstrip().startswith("|"):
                page.table_commands += [(i + 1, span) for span in TABLE_COMMAND.findall(lines[i])]
            i += 1
            continue
        indent, fence, lang = m.groups()
        start = i + 1
        end = start
        while end < len(lines) and not (lines[end].strip().startswith(fence[0] * 3)
                                        and lines[end].strip().strip(fence[0]) == ""):
            end += 1
        lang = lang.lower()
        if lang in REFUSED_LANGS:
            page.problems.append(f"{_rel(path)}:{i + 1}: a ```{lang} block: use ```console (run and "
                                 f"compared) or ```bash (listed, not run)")
        elif lang == RUN_LANG:
            _parse_console(page, start, end, indent)
        elif lang == LIST_LANG:
            _parse_bash(page, start, end, indent)
        i = end + 1
    # Table commands must be run on the same page.
    run = [c.one_line for c in page.commands if c.run]
    for line, span in page.table_commands:
        shown = " ".join(span.split())
        if not any(r.startswith(shown) for r in run):
            page.problems.append(f"{_rel(path)}:{line}: the table shows `{shown}`, which no ```console "
                                 f"block of this page runs")
    return page


def _parse_console(page: Page, start: int, end: int, indent: str) -> None:
    body = [_dedent(page.lines[j], indent) for j in range(start, end)]
    j = 0
    while j < len(body):
        if not body[j].startswith("$ "):
            if body[j].strip():
                page.problems.append(f"{_rel(page.path)}:{start + j + 1}: output before any '$ ' command "
                                     f"in a ```console block")
            j += 1
            continue
        first = j
        parts = [body[j][2:]]
        while parts[-1].endswith("\\") and j + 1 < len(body):
            j += 1
            parts.append(body[j])
        k = j + 1
        while k < len(body) and not body[k].startswith("$ "):
            k += 1
        page.commands.append(Command(page.path, start + first + 1, "\n".join(parts), body[j + 1:k],
                                     start + j + 1, start + k, indent, run=True))
        j = k


def _parse_bash(page: Page, start: int, end: int, indent: str) -> None:
    body = [_dedent(page.lines[j], indent) for j in range(start, end)]
    j = 0
    while j < len(body):
        line = body[j].strip()
        first = j
        parts = [body[j]]
        while parts[-1].rstrip().endswith("\\") and j + 1 < len(body):
            j += 1
            parts.append(body[j])
        if line and not line.startswith("#"):
            page.commands.append(Command(page.path, start + first + 1, "\n".join(parts), [], 0, 0,
                                         indent, run=False))
        j += 1


# ----------------------------------------------------------------------------- running
def scratch_copy(root: Path) -> Path:
    """A fresh copy of the checkout's files (tracked, and untracked ones git does not
    ignore) in a temporary folder, with ../shared linked beside it."""
    base = Path(tempfile.mkdtemp(prefix="docs-check-"))
    dest = base / "ragkit"
    for name in checkout_files(root):
        src = root / name
        if src.is_file() and not src.is_symlink():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    dest.mkdir(exist_ok=True)
    shared = Path(os.environ.get("RAGKIT_SHARED") or root.parent / "shared")
    if shared.exists():
        (base / "shared").symlink_to(shared.resolve())
    return dest


def checkout_files(root: Path) -> list[str]:
    """The files a fresh checkout has: git's tracked files and the new ones it does not
    ignore; outside git, every file but the venv, caches and generated outputs."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=root, capture_output=True, check=True).stdout.decode()
        return [name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", ".ipynb_checkpoints"}
        names = []
        for path in root.rglob("*"):
            rel = path.relative_to(root)
            if path.is_file() and not skip & set(rel.parts) and \
                    (rel.parts[0] != "outputs" or rel.parts[1:2] in (("bench",), ("README.md",))):
                names.append(str(rel))
        return names


def command_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not CLEARED_ENV.match(k)}
    env["RAGKIT_GGUF"] = "smollm2-135m"      # the model every setup has (the docstring says why)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH", "")]))
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", ANONYMIZED_TELEMETRY="False",
               TERM="dumb", NO_COLOR="1")
    env.pop("COLUMNS", None)
    return env


def run_command(command: Command, cwd: Path, env: dict[str, str], timeout: float) -> str:
    try:
        done = subprocess.run(["bash", "-c", command.text], cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
        text = done.stdout.decode("utf-8", errors="replace")
    except subprocess.TimeoutExpired as exc:
        partial = (exc.stdout or b"").decode("utf-8", errors="replace")
        text = partial + f"\n[docs-check: no result within {timeout:g} s]"
    text = text.replace(str(cwd), CHECKOUT)
    return text


def check_page(page: Page, update: bool, timeout: float, keep: bool, log) -> tuple[int, int, int]:
    """Run a page's console commands; (run, differing, rewritten)."""
    todo = [c for c in page.commands if c.run]
    for c in page.commands:
        if not c.run:
            log(f"{c.where}: listed, not run: {c.one_line}")
    if not todo:
        return 0, 0, 0
    cwd = scratch_copy(ROOT)
    env = command_env(ROOT)
    differing, rewrites = 0, []
    try:
        for c in todo:
            started = time.monotonic()
            actual = run_command(c, cwd, env, timeout)
            seconds = time.monotonic() - started
            expected, got = sanitize("\n".join(c.output)), sanitize(actual)
            if expected == got:
                log(f"{c.where}: ok ({seconds:.1f} s): {c.one_line}")
                continue
            differing += 1
            log(f"{c.where}: DIFFERS ({seconds:.1f} s): {c.one_line}")
            log("\n".join(difflib.unified_diff(expected, got, "shown", "printed", lineterm="", n=2)))
            rewrites.append((c, _trim(actual.splitlines())))
    finally:
        if keep:
            log(f"{_rel(page.path)}: scratch copy kept in {cwd}")
        else:
            shutil.rmtree(cwd.parent, ignore_errors=True)
    if update and rewrites:
        lines = list(page.lines)
        for c, new in sorted(rewrites, key=lambda r: r[0].out_start, reverse=True):
            shown = lines[c.out_start:c.out_end]
            blanks = len(shown) - len(_trim(shown))
            lines[c.out_start:c.out_end] = [(c.indent + ln).rstrip() for ln in new] + [""] * blanks
        page.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        log(f"{_rel(page.path)}: wrote the real output of {len(rewrites)} command(s)")
    return len(todo), differing, len(rewrites) if update else 0


def default_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", type=Path, help="markdown files (default: README.md, docs/**/*.md)")
    parser.add_argument("--update", action="store_true", help="write the real outputs into the pages")
    parser.add_argument("--list", action="store_true", help="list every command, run and listed, and stop")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one command may take")
    parser.add_argument("--keep", action="store_true", help="keep each page's scratch copy")
    args = parser.parse_args(argv)
    pages = [parse(p) for p in (args.pages or default_pages())]
    problems = [p for page in pages for p in page.problems]
    if args.list:
        for page in pages:
            for c in page.commands:
                print(f"{c.where}: {'run' if c.run else 'listed'}: {c.one_line}")
        for p in problems:
            print(f"problem: {p}")
        return 1 if problems else 0

    def log(message: str) -> None:
        print(message, flush=True)

    totals = [0, 0, 0]
    for page in pages:
        for i, n in enumerate(check_page(page, args.update, args.timeout, args.keep, log)):
            totals[i] += n
    listed = sum(not c.run for page in pages for c in page.commands)
    for p in problems:
        log(f"problem: {p}")
    run, differing, rewritten = totals
    log(f"docs-check: {run} commands run, {differing} printed something else than shown"
        f"{f' ({rewritten} rewritten)' if args.update else ''}; {listed} listed, not run; "
        f"{len(problems)} problem(s)")
    if problems or (differing and not args.update):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
