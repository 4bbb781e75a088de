/* GET /ui: the inspector page and its assets, compiled into the binary and
 * served with headers that keep whatever a session holds inert text. */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

extern const char ui_index_html[], ui_inspector_css[], ui_inspector_js[], ui_inspector_units_js[],
    ui_favicon_svg[];
extern const size_t ui_index_html_len, ui_inspector_css_len, ui_inspector_js_len,
    ui_inspector_units_js_len, ui_favicon_svg_len;

typedef struct {
    const char *path;
    const char *type;
    const char *body;
    const size_t *len;
} ui_asset;

static const ui_asset assets[] = {
    {"/ui", "text/html; charset=utf-8", ui_index_html, &ui_index_html_len},
    {"/ui/", "text/html; charset=utf-8", ui_index_html, &ui_index_html_len},
    {"/ui/inspector.css", "text/css; charset=utf-8", ui_inspector_css, &ui_inspector_css_len},
    {"/ui/inspector.js", "text/javascript; charset=utf-8", ui_inspector_js, &ui_inspector_js_len},
    {"/ui/inspector-units.js", "text/javascript; charset=utf-8", ui_inspector_units_js,
     &ui_inspector_units_js_len},
    {"/ui/favicon.svg", "image/svg+xml", ui_favicon_svg, &ui_favicon_svg_len},
};

#define NASSETS (sizeof(assets) / sizeof(assets[0]))

/* Spilled texts and unit keys are written by whoever calls the API: the
 * page only ever inserts them as text, and the policy forbids what an
 * injected tag could do anyway (inline script, eval, another origin, being
 * framed by a page that would steer the clicks). */
static const char *const page_headers[] = {
    "Content-Security-Policy",
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Frame-Options", /* X-Content-Type-Options: nosniff is on every answer */
    "DENY",
    "Referrer-Policy",
    "no-referrer",
    NULL,
};

void handle_ui(const app *a, api_request *req, api_response *res)
{
    if (!a->cfg->ui) {
        respond_fail(res, ERR_NOT_FOUND, "the inspector page is switched off (COMPACTD_UI=off)");
        return;
    }
    const ui_asset *found = NULL;
    for (size_t i = 0; i < NASSETS && !found; i++)
        if (strcmp(assets[i].path, req->path) == 0)
            found = &assets[i];
    if (!found) {
        respond_fail(res, ERR_NOT_FOUND, "no route for %s %s", req->method, req->path);
        return;
    }
    size_t len = *found->len;
    res->body = malloc(len + 1);
    if (!res->body) {
        respond_fail(res, ERR_INTERNAL, "out of memory");
        return;
    }
    memcpy(res->body, found->body, len + 1); /* the embedded copy ends in a NUL */
    res->len = len;
    res->status = 200;
    res->content_type = found->type;
    res->headers = page_headers;
}
