"""Validation against measurements: single deployments (:mod:`.fidelity`), under load (:mod:`.load_fidelity`,
:mod:`.accuracy`, :mod:`.accuracy_report`), large published deployments (:mod:`.deployments`) and calibration from
your benchmark results (:mod:`.calibrate`, :mod:`.calibrate_fit`, :mod:`.calibrate_profile`)."""
