from django.contrib import admin
from django.utils import timezone

from archivebox.api.models import APIToken


@admin.register(APIToken)
class APITokenAdmin(admin.ModelAdmin):
    list_display = ("user", "short_token", "created_at", "expires", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("user__username",)
    readonly_fields = ("token", "created_at")
    actions = ["revoke"]

    @admin.display(description="token")
    def short_token(self, obj: APIToken) -> str:
        return f"{obj.token[:6]}…"

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token(s).")
