from django.db import migrations, models
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce


def count_kept_steps(apps, schema_editor):
    """Runs recorded before this migration get their number of steps like new ones."""
    Run = apps.get_model("runs", "Run")
    Step = apps.get_model("runs", "Step")
    steps = Step.objects.filter(run=OuterRef("pk")).order_by().values("run").annotate(n=Count("pk")).values("n")
    Run.objects.update(step_count=Coalesce(Subquery(steps, output_field=models.IntegerField()), 0))


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0006_run_preview"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="step_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(count_kept_steps, migrations.RunPython.noop),
    ]
