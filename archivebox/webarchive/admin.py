"""The web archive's index in the admin: read-only (files are filed and released by the
engine; deleting an index row by hand would break replay, or be refused: see
:mod:`archivebox.webarchive.release`)."""

from __future__ import annotations

from django.contrib import admin

from archivebox.webarchive.models import WarcFile, WarcRecord


class ReadOnly(admin.ModelAdmin):
    list_per_page = 100
    show_full_result_count = False

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(WarcFile)
class WarcFileAdmin(ReadOnly):
    list_display = ("path", "plugin", "records", "revisits", "size", "snapshot", "filed_at")
    list_filter = ("plugin",)
    search_fields = ("path",)
    readonly_fields = [field.name for field in WarcFile._meta.fields]


@admin.register(WarcRecord)
class WarcRecordAdmin(ReadOnly):
    list_display = ("url", "timestamp", "record_type", "status", "mime", "payload_length", "digest", "file")
    list_filter = ("record_type",)
    search_fields = ("url", "digest")
    list_select_related = ("file",)
    readonly_fields = [field.name for field in WarcRecord._meta.fields]
    raw_id_fields = ("file", "snapshot", "original")
