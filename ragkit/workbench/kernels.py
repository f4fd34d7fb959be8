"""The kernel a notebook run executes in: a local process that papermill talks to over Unix
domain sockets (ZeroMQ's IPC transport) in a folder only this user can open, rather than
over loopback TCP ports that any local process could connect to. ipykernel warns about
unencrypted TCP; over IPC there is nothing to warn about. Where Unix sockets do not exist
(Windows) the kernel keeps jupyter_client's TCP default."""

from __future__ import annotations

import os
import shutil
import tempfile

from jupyter_client.manager import AsyncKernelManager


class LocalKernelManager(AsyncKernelManager):
    """jupyter_client's kernel manager, over IPC sockets in a private temporary folder that
    is removed with the kernel."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._socket_dir: str | None = None
        if os.name == "posix":
            self._socket_dir = tempfile.mkdtemp(prefix="ragkit-kernel-")   # mode 0700
            self.transport = "ipc"
            self.ip = os.path.join(self._socket_dir, "kernel")

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self._socket_dir:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
