/*
 * assets.c - the table of the page's files that web/assets.S builds into
 * the binary, by the path each is served at.
 */
#include <string.h>

#include "web.h"

extern const unsigned char web_index_html[], web_index_html_end[];
extern const unsigned char web_app_js[], web_app_js_end[];
extern const unsigned char web_app_css[], web_app_css_end[];
extern const unsigned char web_icon_svg[], web_icon_svg_end[];

const struct web_asset *web_asset_find(const char *path) {
  static const struct web_asset assets[] = {
      {"/", "text/html; charset=utf-8", web_index_html, web_index_html_end},
      {"/app.js", "text/javascript; charset=utf-8", web_app_js, web_app_js_end},
      {"/app.css", "text/css; charset=utf-8", web_app_css, web_app_css_end},
      {"/icon.svg", "image/svg+xml", web_icon_svg, web_icon_svg_end},
  };
  for (size_t i = 0; i < sizeof assets / sizeof assets[0]; i++)
    if (strcmp(assets[i].path, path) == 0) return &assets[i];
  return NULL;
}
