"""Binary rows in the admin: what each machine has provisioned for hooks, read-only but deletable
(deleting a row makes the next hook needing it provision it again)."""

from __future__ import annotations

from django.contrib import admin

from archivebox.binaries.models import Binary


@admin.register(Binary)
class BinaryAdmin(admin.ModelAdmin):
    list_display = ("name", "status", "version", "binprovider", "abspath", "machine", "modified_at")
    list_filter = ("status", "binprovider", "machine")
    search_fields = ("name", "abspath", "version")
    readonly_fields = [field.name for field in Binary._meta.fields]
    ordering = ("name", "-modified_at")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
