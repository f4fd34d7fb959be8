"""ragkit's exceptions. Each message is one line that names the input and the problem,
so the CLI can print it as it is and exit non-zero."""


class RagkitError(Exception):
    """Base class: a problem with the user's input or environment, not a bug."""

    exit_code = 2


class InputError(RagkitError):
    """A file, parameter or question that cannot be used as given."""


class MissingExtraError(RagkitError):
    """An optional package that is not installed; the message names the extra that brings
    it (``ragkit.extras``): ``chromadb is not installed: pip install 'ragkit[dense]'``."""


class IndexFormatError(RagkitError):
    """An index folder that is missing, incomplete or from another format version."""


class ModelError(RagkitError):
    """A GGUF that cannot be loaded, or a generation that failed."""


class GenerationError(ModelError):
    """A model that failed while writing an answer: a server that is down or too slow, an
    HTTP error, a stream cut short, a generation llama.cpp refused. The answer stage answers
    from the evidence instead (``answer_source: "fallback"``); a model that cannot be loaded
    at all stays a ``ModelError``."""


class StoreUnavailableError(RagkitError):
    """A store the command or the server depends on (Neo4j, a Chroma server) that cannot be
    reached or refuses our credentials: a failure on the serving side, not in the request,
    so the server answers 503 and the CLI exits non-zero with this one line."""


class OutputError(RagkitError):
    """A place ragkit cannot write to: a read-only folder, a full disk, no permission."""


def output_error(target, exc: OSError) -> OutputError:
    """The one-line ``OutputError`` for an ``OSError`` raised while writing ``target``."""
    import errno

    problem = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
               errno.EROFS: "a read-only file system", errno.EACCES: "permission denied",
               errno.EPERM: "permission denied"}.get(exc.errno, exc.strerror or type(exc).__name__)
    return OutputError(f"{target}: cannot write ({problem})")


class ContextTooLongError(InputError):
    """A question that does not fit in the model's context with its prompt."""


class NotebookError(RagkitError):
    """A notebook run that was refused or failed."""


class RunTerminated(NotebookError):
    """A notebook run stopped by SIGTERM or Ctrl-C; its artifacts were left as they were."""

    exit_code = 143
