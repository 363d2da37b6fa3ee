"""Personas in the admin: name, user agent, and a write-only cookies.txt field.

The stored cookies are never shown back (only how many there are); pasting a new
cookies.txt replaces them.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin

from archivebox.personas import store
from archivebox.personas.models import Persona


class PersonaForm(forms.ModelForm):
    cookies_txt = forms.CharField(
        label="cookies.txt", required=False, strip=False,
        widget=forms.Textarea(attrs={"rows": 6, "autocomplete": "off", "spellcheck": "false",
                                     "placeholder": "paste a Netscape cookies.txt to replace the stored cookies"}),
        help_text="Write-only: stored in personas/NAME/cookies.txt (mode 0600), never shown again. Empty: keep the current cookies.")

    class Meta:
        model = Persona
        fields = ("name", "user_agent")

    def clean_cookies_txt(self):
        text = self.cleaned_data["cookies_txt"]
        if text.strip():
            try:
                store.parse_cookies(text)
            except store.InvalidCookies as err:
                raise forms.ValidationError(str(err)) from None
        return text

    def clean_name(self):
        name = self.cleaned_data["name"]
        if not self.instance._state.adding and name != self.instance.name:
            raise forms.ValidationError("a persona cannot be renamed (its crawls name it): create a new one")
        return name


@admin.register(Persona)
class PersonaAdmin(admin.ModelAdmin):
    form = PersonaForm
    list_display = ("name", "cookies", "user_agent", "created_at", "modified_at")
    search_fields = ("name", "user_agent")
    readonly_fields = ("cookies", "created_at", "modified_at")

    def get_fields(self, request, obj=None):
        return ("name", "user_agent", "cookies_txt", *(("cookies", "created_at", "modified_at") if obj else ()))

    @admin.display(description="cookies")
    def cookies(self, obj):
        count = store.cookies_count(obj)
        return "none" if count is None else f"{count} cookie(s)"

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if form.cleaned_data.get("cookies_txt", "").strip():
            store.save_cookies(obj, form.cleaned_data["cookies_txt"])

    def delete_model(self, request, obj):
        store.remove_files(obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for persona in queryset:
            store.remove_files(persona)
        super().delete_queryset(request, queryset)
