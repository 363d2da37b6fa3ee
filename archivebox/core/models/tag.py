from django.db import models
from django.utils.text import slugify

from archivebox.core.models.base import ObservedModel


class Tag(ObservedModel):
    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        self.slug = self.slug or slugify(self.name)[:100]
        super().save(*args, **kwargs)
