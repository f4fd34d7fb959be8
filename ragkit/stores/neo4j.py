"""One Neo4j connection over Bolt through the official driver: the stores of the spec term
graph and of the typed KG both run their Cypher through it.

Every query takes its values as parameters (``run(query, **params)``): user text is data,
never Cypher. ``batched`` writes rows as ``UNWIND $rows`` statements, ``BATCH`` at a time;
``write_transaction`` runs several statements as one transaction (all or nothing).

A Neo4j that is down, goes away mid-query, or refuses the password raises
``StoreUnavailableError``: a failure on the serving side, not in the user's input.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Callable, Iterator, Sequence, TypeVar

from ..config import Settings, is_loopback
from ..errors import InputError, StoreUnavailableError
from ..runtime.extras import requires_extra
from ..runtime.faults import fault_point

if TYPE_CHECKING:
    import neo4j

T = TypeVar("T")

BATCH = 1000
CONNECT_TIMEOUT_S = 5.0
RETRY_S = 5.0        # transient errors of one transaction retried for this long
RATE_LIMITED = "Neo.ClientError.Security.AuthenticationRateLimit"
DEFAULT_USER = "neo4j"
DEFAULT_PASSWORD = "ragkit-neo4j"   # what tools/neo4j's launcher sets on a new data folder
BOLT_SCHEMES = ("bolt://", "bolt+s://", "neo4j://", "neo4j+s://")


def default_password(uri: str) -> str:
    """The password of a Neo4j given none (``NEO4J_PASSWORD`` or ``NEO4J_PASSWORD_FILE`` unset):
    ``DEFAULT_PASSWORD`` for one on this machine (what ``make neo4j`` and the tests start); a
    Neo4j elsewhere has no default: InputError naming the URI and the variables."""
    from urllib.parse import urlsplit

    try:
        host = urlsplit(uri).hostname or ""
    except ValueError:
        host = ""
    if is_loopback(host):
        return DEFAULT_PASSWORD
    raise InputError(f"store {uri}: a Neo4j beyond this machine needs its password in NEO4J_PASSWORD "
                     f"or a file named by NEO4J_PASSWORD_FILE (ragkit has no default password for it)")


def is_neo4j_uri(store: str) -> bool:
    """A ``bolt://`` or ``neo4j://`` URI (any other string is a file path)."""
    return store.startswith(BOLT_SCHEMES)


class Neo4jConnection:
    """A verified driver for one database; one-line errors for a Neo4j that is down or
    refuses the password."""

    def __init__(self, uri: str, user: str | None = None, password: str | None = None,
                 database: str | None = None):
        with requires_extra("neo4j"):
            import neo4j
            from neo4j.exceptions import AuthError, ClientError, ServiceUnavailable

        settings = Settings.from_env()
        self.uri = uri
        self.database = database or settings.neo4j_database
        user = user or settings.neo4j_user or DEFAULT_USER
        password = password or settings.neo4j_password or default_password(uri)
        # No server notifications: a query on an empty store names labels that do not exist
        # yet, and the driver would log that hint on stderr, where an error is one line.
        # Short timeouts and retries: a Neo4j that went away is an error in seconds, not
        # after the driver's 30 s of retrying (a server's question would time out first).
        self.driver = neo4j.GraphDatabase.driver(uri, auth=(user, password), notifications_min_severity="OFF",
                                                 connection_timeout=CONNECT_TIMEOUT_S,
                                                 connection_acquisition_timeout=2 * CONNECT_TIMEOUT_S,
                                                 max_transaction_retry_time=RETRY_S)
        try:
            self.driver.verify_connectivity()
        except AuthError:
            self.driver.close()
            raise StoreUnavailableError(f"store {uri}: Neo4j refused user {user!r} and its password "
                                        f"(set NEO4J_USER / NEO4J_PASSWORD)") from None
        except ClientError as exc:
            self.driver.close()
            if exc.code == RATE_LIMITED:
                raise StoreUnavailableError(f"store {uri}: Neo4j refuses logins of user {user!r} for a few "
                                            f"seconds after too many wrong passwords; try again shortly") from None
            raise StoreUnavailableError(f"store {uri}: Neo4j refused the connection ({exc.code})") from None
        except (ServiceUnavailable, OSError) as exc:
            self.driver.close()
            raise StoreUnavailableError(f"store {uri}: Neo4j is not reachable ({type(exc).__name__}); "
                                        f"start one with 'make neo4j' or set NEO4J_URI") from None

    @contextlib.contextmanager
    def _reachable(self) -> Iterator[None]:
        """Turn a connection lost after start-up into the same one-line error."""
        with requires_extra("neo4j"):
            from neo4j.exceptions import (ConnectionPoolError, DatabaseUnavailable, IncompleteCommit,
                                          ServiceUnavailable, SessionExpired)

        try:
            yield
        except IncompleteCommit:
            raise StoreUnavailableError(f"store {self.uri}: Neo4j went away while committing; the write may "
                                        "or may not have been applied (run it again)") from None
        except (ServiceUnavailable, SessionExpired, ConnectionPoolError, DatabaseUnavailable, OSError) as exc:
            raise StoreUnavailableError(f"store {self.uri}: Neo4j stopped answering "
                                        f"({type(exc).__name__})") from None

    def run(self, query: str, **params) -> list:
        """The records of one auto-committed, parameterized query."""
        with self._reachable():
            records, _, _ = self.driver.execute_query(query, params, database_=self.database)
        return records

    def batched(self, query: str, rows: Sequence[dict], batch: int = BATCH) -> None:
        """``query`` (an ``UNWIND $rows`` statement) over ``rows``, ``batch`` rows at a time."""
        for start in range(0, len(rows), batch):
            self.run(query, rows=list(rows[start:start + batch]))

    def write_transaction(self, work: Callable[["neo4j.ManagedTransaction"], T]) -> T:
        """``work(tx)`` in one write transaction: committed when it returns, rolled back
        (nothing written) when it raises. The driver may call ``work`` again after a
        transient error, so it must read what it needs through ``tx``."""
        with self._reachable(), self.driver.session(database=self.database) as session:
            return session.execute_write(work)

    @staticmethod
    def batched_in(tx, query: str, rows: Sequence[dict] | Sequence[str], batch: int = BATCH) -> None:
        """``batched`` inside the transaction ``tx``."""
        for start in range(0, len(rows), batch):
            tx.run(query, rows=list(rows[start:start + batch])).consume()
            fault_point("neo4j.batch")

    def ping(self) -> None:
        """Nothing when the server answers; else ``StoreUnavailableError`` naming it."""
        with self._reachable():
            self.driver.verify_connectivity()

    def close(self) -> None:
        self.driver.close()
