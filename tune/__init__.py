"""tirc.tune: auto-tuning. A function's schedule decisions (the default rules' and any
`sample_*` a user writes) are searched by measuring candidates, guided by a cost model, and the
best are recorded as JSON lines that `tirc --tuned FILE` replays.

space.py (decisions and candidates) -> search.py (evolution + coordinate descent) ->
measure.py (builder pool, runner process) -> records.py; cost_model.py, features.py and
roofline.py rank candidates before they are built; driver.py runs a whole `tirc tune`.
"""
