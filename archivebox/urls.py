from django.contrib import admin
from django.urls import include, path

from archivebox.api.v1 import api

admin.autodiscover()  # see INSTALLED_APPS (done already unless Django started for a reading command)

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("", include("archivebox.web.urls")),
]
