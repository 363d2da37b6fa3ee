from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0009_alter_process_kind'),
    ]

    operations = [
        migrations.AlterField(
            model_name='process',
            name='kind',
            field=models.CharField(choices=[('worker', 'Worker'), ('hook', 'Hook'), ('forkserver', 'Forkserver'), ('install', 'Install'), ('browser', 'Browser')], max_length=16),
        ),
    ]
