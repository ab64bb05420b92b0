"""What every runtime's glue shares: the ``async`` session classes (``async_session``), the
client methods made from the app layer's call plans (``plans``), the stdio helpers, the HTTP
server's and client's runtime-free pieces, the deciders for parked exchanges and the tasks'
runtimes. Private: the public names are re-exported by the runtime packages."""
