"""gradcheck_cli/schemas: every JSON document follows its schema, and the schemas follow the code.

The autouse fixture in conftest.py (json_documents.py) validates every document the other tests
make gradcheck write; here: the golden files, the schemas themselves, their agreement with every
result record and error class, and that an added or a renamed field fails validation.
"""

import copy
import json

import jsonschema
import pytest

import golden
import json_documents
from gradcheck_cli import check, errors, schemas
from gradcheck_cli.advice import steps as advice
from gradcheck_cli.chapter import fixtures, nll, sampled, scan
from gradcheck_cli.check import directional, hessian
from gradcheck_cli.core.record import Record, json_fields
from gradcheck_cli.engine import estimator, sampling
from gradcheck_cli.errors import command_line as cli_errors
from gradcheck_cli.taylor import remainder as taylor
from gradcheck_cli.verdict import diagnosis
from gradcheck_cli.verdict import terms as judge_terms

JSON_CASES = [
    path
    for path in golden.case_paths()
    if {"--json", "json"} & set(golden.command_line(path.read_text(encoding="utf-8")).split())
    and golden.parse_case(path.read_text(encoding="utf-8"))["stdout"].startswith("{")
]


def _document(path):
    case = golden.parse_case(path.read_text(encoding="utf-8"))
    return json.loads(case["stdout"]), golden.command_line(case["command"]).split()[1]


@pytest.mark.parametrize("path", JSON_CASES, ids=lambda path: path.stem)
def test_every_golden_json_document_follows_its_subcommands_schema(path):
    document, subcommand = _document(path)
    assert json_documents.problems(json.dumps(document, indent=2), subcommand) == []


def test_there_are_golden_json_documents_of_every_subcommand():
    assert {_document(path)[1] for path in JSON_CASES} == set(schemas.NAMES[:10])


@pytest.mark.parametrize("name", schemas.NAMES)
def test_every_schema_is_a_self_contained_draft_2020_12_schema(name):
    document = schemas.schema(name)
    jsonschema.Draft202012Validator.check_schema(document)
    assert document["$schema"] == schemas.DRAFT
    references = [value for key, value in _items(document) if key == "$ref"]
    assert references and all(reference == "#" or reference.startswith("#/$defs/") for reference in references)
    for reference in references:  # each resolves inside the document
        node = document
        for part in reference[2:].split("/") if reference != "#" else ():
            node = node[part]


def _items(node):
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _items(value)
    elif isinstance(node, list):
        for value in node:
            yield from _items(value)


def _objects(node):
    """Every schema object with ``properties`` in ``node``."""
    if isinstance(node, dict):
        if "properties" in node:
            yield node
        for key, value in node.items():
            if key != "properties":
                yield from _objects(value)
            else:
                for item in value.values():
                    yield from _objects(item)
    elif isinstance(node, list):
        for value in node:
            yield from _objects(value)


@pytest.mark.parametrize("file", (*schemas.NAMES, "defs"))
def test_every_object_requires_all_its_fields_and_allows_no_other(file):
    found = list(_objects(schemas.raw(file)))
    assert found
    for node in found:
        assert node["additionalProperties"] is False, node.get("description")
        assert node["required"] == list(node["properties"]), node.get("description")
        assert node["type"] == "object"


#: Each result record's schema object: (file, JSON pointer into it).
RECORD_SCHEMAS = {
    estimator.CentralDifference: ("defs", "/$defs/difference"),
    estimator.GradientComparison: ("defs", "/$defs/comparison"),
    estimator.OneSidedSlopeComparison: ("defs", "/$defs/slopes"),
    estimator.ScalarGradientCheck: ("defs", "/$defs/scalar_check"),
    sampling.SampledCoordinate: ("defs", "/$defs/sampled_coordinate"),
    sampling.ParameterSample: ("sample", "/$defs/parameter_sample"),
    sampled.TensorGradientCheck: ("defs", "/$defs/tensor_check"),
    sampled.CoordinateGradientCheck: ("defs", "/$defs/tensor_check/properties/checks/items"),
    nll.NllGradientExample: ("defs", "/$defs/nll"),
    fixtures.KinkDiagnostic: ("defs", "/$defs/kink"),
    scan.StepScanRecord: ("defs", "/$defs/scan_record"),
    advice.StepAdvice: ("advice", ""),
    advice.StepEstimate: ("advice", "/$defs/step_estimate"),
    advice.RejectedStep: ("advice", "/$defs/rejected_step"),
    advice.ProblemStepAdvice: ("advice", "/$defs/problem_advice"),
    advice.ParameterStepAdvice: ("advice", "/$defs/problem_advice/properties/parameters/items"),
    check.GradientCheckReport: ("report", ""),
    check.PurityVerdict: ("report", "/$defs/purity"),
    check.CallCheck: ("report", "/$defs/call"),
    check.ParameterCheck: ("report", "/$defs/parameter"),
    check.CoordinateCheck: ("report", "/$defs/coordinate_check"),
    check.KinkVerdict: ("report", "/$defs/kink"),
    judge_terms.JudgedEstimate: ("report", "/$defs/estimate"),
    judge_terms.DirectionalEstimate: ("report", "/$defs/directional_estimate"),
    judge_terms.ErrorBar: ("report", "/$defs/error_bar"),
    directional.DirectionalCheck: ("report", "/$defs/directional"),
    diagnosis.Diagnosis: ("report", "/$defs/diagnosis"),
    taylor.TaylorResult: ("taylor-result", ""),
    taylor.TaylorPoint: ("taylor-result", "/$defs/point"),
    taylor.LocalizationTest: ("taylor-result", "/$defs/localization_test"),
}
#: Records that no JSON document holds: a plan, a probe's geometry, a dtype's constants, a verdict's parts.
NOT_IN_JSON = {"ProbeGeometry", "ProbeDtype", "PlannedCoordinate", "Judgement", "DirectionalProbe"}
#: Library results with no command line (yet): check_hessian_vector_product's report and its parts.
NOT_IN_JSON |= {
    cls.__name__ for cls in (hessian.HessianComponent, hessian.HessianParameterCheck, hessian.HessianVectorReport)
}


def _subclasses(cls):
    for subclass in cls.__subclasses__():
        yield subclass
        yield from _subclasses(subclass)


def test_every_result_record_has_a_schema_object_or_is_in_no_document():
    records = {cls for cls in _subclasses(Record) if cls.__module__.startswith("gradcheck_cli.")}
    records = {cls for cls in records if cls.__module__ != "gradcheck_cli.adapters.torch"}
    unplaced = {cls.__name__ for cls in records} - {cls.__name__ for cls in RECORD_SCHEMAS} - NOT_IN_JSON
    assert not unplaced, f"add these records to a schema (and RECORD_SCHEMAS): {sorted(unplaced)}"


@pytest.mark.parametrize("record", RECORD_SCHEMAS, ids=lambda record: f"{record.__module__}.{record.__name__}")
def test_each_records_fields_are_its_schema_objects_fields_in_order(record):
    file, pointer = RECORD_SCHEMAS[record]
    node = schemas.raw(file)
    for part in pointer.split("/")[1:]:
        node = node[part]
    node = next(option for option in node.get("anyOf", [node]) if "properties" in option)
    assert list(node["properties"]) == [key for _, key in json_fields(record)]  # the text's words (Record)


def _error_classes():
    for module in (errors, cli_errors):
        for name in module.__all__:
            cls = getattr(module, name)
            if cls is not errors.GradCheckError:
                yield cls


def test_every_error_class_is_one_kind_of_the_error_schema_with_its_fields():
    kinds = schemas.raw("error")["$defs"]
    assert set(kinds) == {cls.__name__ for cls in _error_classes()}
    for cls in _error_classes():
        assert list(kinds[cls.__name__]["properties"]) == ["kind", *cls.fields, "message"], cls.__name__
        assert kinds[cls.__name__]["properties"]["kind"] == {"const": cls.__name__}


def _mutations(document):
    """(description, document) for each object in ``document``: with a field added, and with its
    first field renamed; one object per distinct path (indexes dropped)."""
    seen = set()

    def walk(node, path, template):
        if isinstance(node, dict) and node:
            if template not in seen:
                seen.add(template)
                yield path, "added", lambda target: target.__setitem__("undocumented", 1)
                first = next(iter(node))
                yield (
                    path,
                    f"renamed {first}",
                    lambda target, first=first: target.__setitem__(first + "_renamed", target.pop(first)),
                )
            for key, value in node.items():
                if key not in ("steps", "schema"):  # keyed by parameter name; a JSON Schema
                    yield from walk(value, (*path, key), (*template, key))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from walk(value, (*path, index), (*template, "[]"))

    yield from walk(document, (), ())


def _mutation_cases():
    seen = set()
    for path in JSON_CASES:
        document, subcommand = _document(path)
        name = json_documents.schema_name(document, subcommand)
        for where, change, _ in _mutations(document):
            template = (name, tuple("[]" if isinstance(part, int) else part for part in where), change.split()[0])
            if template not in seen:
                seen.add(template)
                yield pytest.param(path, where, change, id=f"{path.stem}:{'/'.join(map(str, where))}:{change}")


@pytest.mark.parametrize(("path", "where", "change"), list(_mutation_cases()))
def test_an_added_or_renamed_field_fails_validation(path, where, change):
    document, subcommand = _document(path)
    validator = json_documents.validator(json_documents.schema_name(document, subcommand))
    assert validator.is_valid(document)
    mutated = copy.deepcopy(document)
    target = mutated
    for part in where:
        target = target[part]
    mutation = next(mutate for at, how, mutate in _mutations(document) if at == where and how == change)
    mutation(target)
    assert not validator.is_valid(mutated)


def test_the_suites_validation_reports_a_document_that_breaks_its_schema():
    document, subcommand = _document(golden.GOLDEN_DIR / "identity-json.txt")
    document["identity"]["comparison"]["verdict"] = "passed"
    found = json_documents.problems(json.dumps(document), subcommand)
    assert len(found) == 1 and "verdict" in found[0]


def test_schema_lists_every_document_and_prints_each_bundled():
    listed = json.loads(golden.run("gradcheck schema --json")[1])["schemas"]
    assert [entry["name"] for entry in listed] == list(schemas.NAMES)
    for name in schemas.NAMES:
        status, stdout, stderr = golden.run(f"gradcheck schema {name}")
        assert (status, stderr, json.loads(stdout)) == (0, "", schemas.schema(name))
        assert json.loads(golden.run(f"gradcheck schema {name} --json")[1]) == {"schema": schemas.schema(name)}


def test_docs_json_md_is_generated_from_the_schemas():
    """docs/json.md's tables are the schemas' fields: `make golden` rewrites them after a schema changes."""
    assert json_documents.DOCS.read_text(encoding="utf-8") == json_documents.documented()
    assert json_documents.BEGIN in json_documents.DOCS.read_text(encoding="utf-8")


def test_the_diagnosis_kinds_are_the_codes():
    definition = schemas.raw("report")["$defs"]["diagnosis"]["properties"]["kind"]
    assert definition["enum"] == list(diagnosis.KINDS)


def test_the_verdicts_are_the_judges():
    """A coordinate and a directional test can each be a suspected kink; a parameter and the report cannot."""
    report = schemas.raw("report")
    verdicts = [judge_terms.PASSED, judge_terms.FAILED, judge_terms.INCONCLUSIVE]
    assert report["properties"]["verdict"]["enum"] == verdicts
    assert report["$defs"]["parameter"]["properties"]["verdict"]["enum"] == verdicts
    for name in ("coordinate_check", "directional"):
        assert report["$defs"][name]["properties"]["verdict"]["enum"] == [*verdicts, judge_terms.KINK]
