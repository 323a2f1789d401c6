"""A judge against people: each seed paper's human study, run on your own runs' images.

``t2ireason rate`` draws the study as the paper drew it (:func:`make_study`: the sample, each image's
raters, a self-contained rating page); the raters rate in their browser and export one file each;
``t2ireason agreement`` reads those files (:func:`read_ratings`: whatever does not fit is named and left
out), merges them as the papers do and prints the paper's table against every judge of the runs
(:func:`compute_agreement`), into each run and its report; :func:`export_study` makes it a Hub dataset.
What each paper asked is in :mod:`t2ireason.study.protocols`.
"""

from .agreement import agreement_sections, compute_agreement, write_agreement
from .export import export_study
from .ratings import merge, read_ratings
from .sample import load_study, make_study

__all__ = ["make_study", "load_study", "read_ratings", "merge", "compute_agreement", "write_agreement",
           "agreement_sections", "export_study"]
