from django.contrib import admin
from django.urls import include, path

from archivebox.api.v1 import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("", include("archivebox.web.urls")),
]
