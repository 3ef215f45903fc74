"""DLAMA's released layout, written beside kgcult's own ``dlama.jsonl`` so DLAMA's scripts
(AMR-KELEG/DLAMA) read a kgcult build unchanged:

``<pair>/dlama/<lang>/<P>_general_<REGION>.jsonl`` (``--dataset_dir <pair>/dlama`` of
``mlama/scripts/run_prompting_experiment.py``, which reads ``<dataset_dir>/<lang>/<P>_*.jsonl``),
one line per subject, best ranked first, with DLAMA's fields in its order
(``dlama/data_generation_utils.py``): ``sub_uri``, ``obj_uri`` (the augmented objects of
``generate_exhaustive_objects.py``), ``sub_label``, ``obj_label`` (aligned with
``obj_uri``), ``country``, ``size`` (the largest article of the subject on its country's
Wikipedias) and ``uuid`` = ``<P>_general_<REGION>_<line number from 0>``. As DLAMA writes
them, ``obj_uri`` and ``country`` are ``sorted(set(...))`` of QID strings (text order:
Q1006 before Q114).

``country`` is DLAMA's ``country`` column: the subject itself when the predicate's subject
is a country (P30 P36 P37 P47 P530), the subject's objects (before augmentation) when its
object is (P17 P27 P495 P1376), else the culture's countries the subject was found
through. ``REGION`` and the domain come from ``config.release`` of ``dlama.json``.

``templates/<lang>/templates.jsonl``: kgcult's DLAMA templates in mLAMA's shape
(``{"relation", "template", "label"}``), for ``--templates_file_path``.
"""
from __future__ import annotations

from collections import defaultdict

from kgcult import resources
from kgcult.files import read_jsonl
from kgcult.views.output import Output

FIELDS = ["sub_uri", "obj_uri", "sub_label", "obj_label", "country", "size", "uuid"]
TEMPLATE_FIELDS = ["relation", "template", "label"]


def region(config: dict, culture: str) -> str:
    """DLAMA's region name of a culture (``config.release.regions``; else the culture's
    name in capitals, ``-`` as ``_``, as DLAMA names its regions)."""
    return config.get("release", {}).get("regions", {}).get(culture) or culture.upper().replace("-", "_")


def country_field(spec: dict, subject: str, raw_objects: list[str], culture_countries) -> list[str]:
    """DLAMA's ``country`` of one subject (QIDs), by what the predicate's subject and
    object are (``config.predicates.<P>.subject/object``)."""
    if spec.get("subject") == "country":
        values = [subject]
    elif spec.get("object") == "country":
        values = raw_objects
    else:
        values = culture_countries
    return sorted(set(values))


def line(subject: str, sub_label: str, objects: list[tuple[str, str]], country: list[str], size: int) -> dict:
    """One subject's line without its uuid; ``objects`` are (QID, label) pairs."""
    objs = sorted(set(objects))
    return {"sub_uri": subject, "obj_uri": [o for o, _ in objs], "sub_label": sub_label,
            "obj_label": [l for _, l in objs], "country": country, "size": size}


def outputs(config: dict, files: dict[tuple[str, str, str, str], list[dict]],
            predicates_by_lang: dict[str, set[str]]) -> list[Output]:
    """The per-language files ({(pair, lang, predicate, culture): lines in rank order}) with
    their uuids, and the templates of the languages built."""
    domain = config.get("release", {}).get("domain", "general")
    out = []
    for (pair, lang, pid, culture), rows in sorted(files.items()):
        name = f"{pid}_{domain}_{region(config, culture)}"
        lines = [dict(r, uuid=f"{name}_{i}") for i, r in enumerate(rows)]
        out.append(Output(f"{pair}/dlama/{lang}/{name}.jsonl", lines, FIELDS))
    templates = config.get("release", {}).get("templates")
    if templates:
        by_lang = defaultdict(list)
        for t in read_jsonl(resources.queries("templates", templates)):
            if t.get("predicate") in predicates_by_lang.get(t.get("lang", ""), ()):
                by_lang[t["lang"]].append({"relation": t["predicate"], "template": t["template"],
                                           "label": t.get("label", t["predicate"])})
        for lang, rows in sorted(by_lang.items()):
            rows.sort(key=lambda r: int(r["relation"][1:]))
            out.append(Output(f"templates/{lang}/templates.jsonl", rows, TEMPLATE_FIELDS))
    return out
