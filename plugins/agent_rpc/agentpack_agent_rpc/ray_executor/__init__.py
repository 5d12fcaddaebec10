"""The ``ray`` executor: a run's scenarios fanned out over a Ray cluster (the optional ``ray`` extra).

``settings`` reads where the cluster is and the limits, ``package`` decides
what travels with the job, ``cluster`` connects, ``node`` is what runs on a
node (one agent session per scenario slot), ``limiter`` is the cluster-wide
judge limit and ``executor`` feeds the slots. Only ``cluster``, ``node`` and
``limiter`` import Ray, and only once a run uses it.
"""
