"""Both calibrations' fitting, on the validation split: the offline agents' (:mod:`.offline`) and an
LLM endpoint's weights (:mod:`.llm`). A worker only reads what these save (:mod:`graph.calibration`,
:mod:`graph.llm_calibration`); `recloop prepare`, `recloop calibrate` and the lab's own commands fit."""
