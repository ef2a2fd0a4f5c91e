"""Two memory systems written for the optimizer's plugin tests (issue 39), in styles unlike the
reference systems and each other, each an ``OptimizableSystem`` with weak defaults planted in
knobs that specific operations read:

* ``household``: a class with methods, rule-based, parameters only; every parameter recorded
  in the trace as a ``parameter`` variable its operation reads (the knob is found from the
  trace); its configuration a JSON file.
* ``concierge``: plain functions calling an OpenAI-compatible endpoint with the ``openai``
  client, two prompts and a parameter declared by the operations that read them
  (``read_by``, nothing of them traced); its configuration a TOML file.

Each module's ``evaluate(config file, ids)`` is the user's own code: it reads the accepted
configuration and scores the system without memtrace (a test checks it reproduces the
reported test accuracy).
"""
