"""``gradcheck schema``: the JSON Schemas of the documents that ``--json`` writes."""

import click

from ... import schemas
from ...display import render
from ..app import Report, output_options, run, summary


@click.command(
    short_help=summary("schema"),
    help=(
        "[NAME] is the document whose JSON Schema (Draft 2020-12) to print, self-contained; with no NAME, "
        "the documents are listed. Each subcommand's --json output has the subcommand's name (its schema also allows the "
        "error document of bad input); report, taylor-result, advice and error are the records they share.\n\n"
        "The text output of NAME is the schema itself (gradcheck schema check > check.schema.json); --json "
        'wraps it as {"schema": ...}, like every other document; --format table lists its fields. Every '
        "object lists all its fields and allows no other, so a field renamed or added in a later version "
        "fails validation."
    ),
)
@click.argument("name", required=False, metavar="[NAME]", type=click.Choice(schemas.NAMES))
@output_options
def schema(output_format, name):
    def compute():
        if name is None:
            return Report((render.schema_list(schemas.summary()),))
        return Report((render.schema_document(name, schemas.schema(name)),))

    run(output_format, compute)
