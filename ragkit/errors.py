"""ragkit's exceptions. Each message is one line that names the input and the problem,
so the CLI can print it as it is and exit non-zero with the class's ``exit_code``:

==  ===============================================================================
2   usage: an unknown command or option, a missing or malformed argument (argparse)
3   bad input: a file, parameter or question that cannot be used as given
4   a dependency is down or missing: a store or server that cannot be reached, an
    optional package that is not installed
1   anything else: a model that fails, a place that cannot be written, a failed
    notebook run (and a bug, with its traceback)
==  ===============================================================================

130 is an interrupt (Ctrl-C) and 143 a notebook run stopped by SIGTERM.
"""

USAGE = 2
BAD_INPUT = 3
DEPENDENCY = 4
OTHER = 1


class RagkitError(Exception):
    """Base class: a problem with the user's input or environment, not a bug."""

    exit_code = OTHER


class UsageError(RagkitError):
    """A command line argparse refused (an unknown option, a missing argument)."""

    exit_code = USAGE


class InputError(RagkitError):
    """A file, parameter or question that cannot be used as given."""

    exit_code = BAD_INPUT


class MissingExtraError(RagkitError):
    """An optional package that is not installed; the message names the extra that brings
    it (``ragkit.runtime.extras``): ``chromadb is not installed: pip install 'ragkit-workbench[dense]'``."""

    exit_code = DEPENDENCY


class IndexFormatError(RagkitError):
    """An index folder that is missing, incomplete or from another format version."""

    exit_code = BAD_INPUT


class ModelError(RagkitError):
    """A GGUF that cannot be loaded (the file named, or a catalog model not installed), or
    a generation that failed."""

    exit_code = BAD_INPUT


class GenerationError(ModelError):
    """A model that failed while writing an answer: a server that is down or too slow, an
    HTTP error, a stream cut short, a generation llama.cpp refused. The answer stage answers
    from the evidence instead (``answer_source: "fallback"``); a model that cannot be loaded
    at all stays a ``ModelError``."""

    exit_code = DEPENDENCY


class StoreUnavailableError(RagkitError):
    """A store the command or the server depends on (Neo4j, a Chroma server) that cannot be
    reached or refuses our credentials: a failure on the serving side, not in the request,
    so the server answers 503 and the CLI exits non-zero with this one line."""

    exit_code = DEPENDENCY


class ClusterError(RagkitError):
    """A Ray cluster that cannot be reached, or a build stage it could not finish (past
    Ray's own retries); the message names the address or the stage."""

    exit_code = DEPENDENCY


class ClusterLost(ClusterError):
    """A Ray cluster that stopped answering during a build stage: the stage's work is gone
    and so is this process's connection (Ray's threads are left in a state only the end of
    the process clears; the command line ends at once after its one line)."""


class OutputError(RagkitError):
    """A place ragkit cannot write to: a read-only folder, a full disk, no permission."""


def output_error(target, exc: OSError) -> OutputError:
    """The one-line ``OutputError`` for an ``OSError`` raised while writing ``target``."""
    import errno

    problems: dict[int | None, str] = {
        errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
        errno.EROFS: "a read-only file system", errno.EACCES: "permission denied", errno.EPERM: "permission denied"}
    problem = problems.get(exc.errno, exc.strerror or type(exc).__name__)
    return OutputError(f"{target}: cannot write ({problem})")


class ContextTooLongError(InputError):
    """A question that does not fit in the model's context with its prompt."""


class NotebookError(RagkitError):
    """A notebook run that was refused or failed."""


class RunTerminated(NotebookError):
    """A notebook run stopped by SIGTERM or Ctrl-C; its artifacts were left as they were."""

    exit_code = 143
