"""Progress bars, drawn when someone is watching.

Every long step of ragkit (tokenizing, embedding, importing, evaluating) takes
``progress: bool | None``. ``True`` or ``False`` is obeyed; ``None``, the library default,
means *automatic*:

- ``RAGKIT_PROGRESS=1`` or ``0`` decides when set;
- off under CI (``CI`` set);
- in a Jupyter kernel: on when the cell was run by a person, off when a program ran it.
  A notebook frontend (JupyterLab, Notebook, VS Code) sends each cell with ``allow_stdin``
  so ``input()`` can ask its user; papermill, nbclient and nbval run cells without it, so
  their outputs (and nbval's compared outputs) hold no bars;
- elsewhere: on when stderr is a terminal.

The command line decides for itself (bars at a terminal, never with ``--json``) and passes
``True`` or ``False``.
"""

from __future__ import annotations

import sys
from typing import Any, Iterable

from ..config import Settings


def _kernel_allows_stdin() -> bool | None:
    """Whether the Jupyter cell running now was sent by a person's frontend (``allow_stdin``);
    None outside a Jupyter kernel."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    return bool(getattr(kernel, "_allow_stdin", False))


def show_progress(progress: bool | None = None, settings: Settings | None = None) -> bool:
    """Whether to draw progress bars: ``progress`` when given, else the automatic choice
    described in this module's docstring."""
    if progress is not None:
        return bool(progress)
    settings = settings or Settings.from_env()
    if settings.progress is not None:
        return settings.progress
    if settings.ci:
        return False
    interactive = _kernel_allows_stdin()
    if interactive is not None:
        return interactive
    return sys.stderr.isatty()


def progress_bar(iterable: Iterable | None = None, *, progress: bool | None = None, **options: Any):
    """A ``tqdm`` bar (the notebook widget in Jupyter, text elsewhere) over ``iterable``,
    disabled unless ``show_progress(progress)``; ``options`` go to tqdm (``desc``, ``total``,
    ``unit`` ...; ``disable=True`` turns it off whatever ``progress`` says)."""
    from tqdm.auto import tqdm

    disable = options.pop("disable", False) or not show_progress(progress)
    return tqdm(iterable, disable=disable, **options)
