"""Schemathesis checks for ``ragkit serve`` (loaded through ``SCHEMATHESIS_HOOKS`` by
tests/test_server_fuzz.py): no 500, and every error in the documented shape, one line."""

import schemathesis


@schemathesis.check
def errors_in_the_documented_shape(ctx, response, case):
    """No 500 (an unexpected error); any other 4xx or 5xx is a JSON ``{"error": message}``
    (on ``/v1/...`` OpenAI's ``{"error": {"message", ...}}``) whose message is one line."""
    status = response.status_code
    if status == 500:
        raise AssertionError(f"500 for {case.method} {case.path}: {response.text[:200]}")
    if status < 400:
        return
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"{status} for {case.method} {case.path} is not JSON: {response.text[:200]}") from None
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    if not isinstance(message, str) or not message or "\n" in message:
        raise AssertionError(f"{status} for {case.method} {case.path}: not a one-line error: {response.text[:200]}")
