/*
 * assets.S - the page's files (web/static/), built into the binary so
 * that `jobq web` needs nothing beside it and works offline.  Each file
 * is a symbol NAME and its end NAME_end; web/assets.c lists them.
 */
#define ASSET(name, file)                  \
  .section .rodata;                        \
  .global name;                            \
  .global name##_end;                      \
  .balign 16;                              \
  name:                                    \
  .incbin file;                            \
  name##_end:                              \
  .byte 0

ASSET(web_index_html, "web/static/index.html")
ASSET(web_app_js, "web/static/app.js")
ASSET(web_app_css, "web/static/app.css")
ASSET(web_icon_svg, "web/static/icon.svg")

.section .note.GNU-stack, "", @progbits
