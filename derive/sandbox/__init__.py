"""Child processes for user code: the one place derive runs code it did not write.

:mod:`derive.sandbox.process` (the parent side) starts a child in its own session, with a
private pipe each way, standard output captured and watched, a timeout per request, and
kills the child's whole session when it is done; :mod:`derive.sandbox.child` (the child
side, standard library only) is the script the child runs: it loads a *service* — a file
with a ``handle(message) -> reply`` function, :mod:`derive.impl.run.worker` for ``derive impl``,
:mod:`derive.flex.child` for FlexAttention tracing — and answers each request with one
reply, a JSON header line (each numpy array there as its dtype and shape) and the arrays' bytes
(no pickle), which the parent decodes. A ``sys.exit`` in the user's code becomes the reply ``("exit", code)`` and ends the
child; any other exception it lets through becomes ``("raised", text)``.

Nothing here imports the rest of derive, so a child starts without SymPy.
"""
