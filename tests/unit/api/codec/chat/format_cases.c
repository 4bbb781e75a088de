/* Each chat format's descriptor is complete (a name the spec lists, an
 * encoding compactd has, a media provider, a reacquire tool in the format's
 * schema, one codec), the check refuses a planted incomplete one, and a
 * request naming a format there is none of is refused at $.format as
 * before. Run with the rank files' folder. */
#include "chat_budget.h"
#include "chat_codec.h"
#include "check.h"
#include "shared_defs.h"

#include <stdio.h>
#include <string.h>

static const decode_limits limits = {64, 64, 1 << 20, 1 << 20, 100};

/* An encoding the tokenizer table holds (loaded, as the rank files are). */
static int known_encoding(const char *name)
{
    return name && tokenizer_find(name, strlen(name)) != NULL;
}

/* Why f is not complete, or NULL when it is. */
static const char *incomplete(const chat_format *f)
{
    static const char *const spec[] = {CHAT_FORMAT_OPENAI, CHAT_FORMAT_ANTHROPIC,
                                       CHAT_FORMAT_OPENAI_RESPONSES};
    int listed = 0;
    for (size_t i = 0; f->name && i < sizeof(spec) / sizeof(spec[0]); i++)
        listed |= strcmp(f->name, spec[i]) == 0;
    if (!listed)
        return "its name is no format of spec/shared.json";
    if (!known_encoding(f->tokenizer))
        return "it counts with no encoding compactd has";
    if (f->billed_by && !known_encoding(f->billed_by))
        return "it is billed by an encoding compactd does not have";
    if (f->media != CHAT_MEDIA_OPENAI && f->media != CHAT_MEDIA_ANTHROPIC)
        return "no provider's formulas price its media";
    json_t *tool = f->reacquire_tool ? json_loads(f->reacquire_tool, 0, NULL) : NULL;
    /* OpenAI's schemas nest the tool under "function"; Anthropic's is flat. */
    json_t *fn = json_object_get(tool, "function") ? json_object_get(tool, "function") : tool;
    const char *tool_name = json_string_value(json_object_get(fn, "name"));
    int named = tool_name && strcmp(tool_name, "reacquire") == 0;
    json_decref(tool);
    if (!named)
        return "it carries no reacquire tool definition";
    const chat_codec *codec = chat_codec_of(f);
    if (!codec || codec->format != f)
        return "no codec reads and writes it";
    return NULL;
}

static void every_format_is_complete(void)
{
    size_t n = 0;
    for (const chat_format *f; (f = chat_format_at(n)) != NULL; n++) {
        const char *why = incomplete(f);
        check(!why, "%s: %s", f->name ? f->name : "(no name)", why ? why : "");
        check(chat_format_find(f->name, strlen(f->name)) == f, "%s: found by its name", f->name);
    }
    check(n == CHAT_FORMAT_COUNT, "%zu descriptors for %d formats", n, CHAT_FORMAT_COUNT);
}

/* The check above can fail: each hole planted in a copy of a complete
 * descriptor is named. */
static void a_planted_hole_is_named(void)
{
    const chat_format *good = chat_format_find(CHAT_FORMAT_OPENAI, strlen(CHAT_FORMAT_OPENAI));
    check(good && !incomplete(good), "openai's descriptor is complete");
    if (!good)
        return;
    static const struct {
        const char *what;
        chat_format f;
        const char *why;
    } holes[] = {
        {"an unknown encoding", {.tokenizer = "p50k_base"}, "it counts with no encoding"},
        {"a tool with no name", {.reacquire_tool = "{\"type\":\"function\"}"}, "no reacquire tool"},
        {"an unknown media provider", {.media = (chat_media_provider)7}, "no provider's formulas"},
        {"a name the spec does not list", {.name = "gemini"}, "its name is no format"},
        {"a copy no codec points at", {0}, "no codec"},
    };
    for (size_t i = 0; i < sizeof(holes) / sizeof(holes[0]); i++) {
        chat_format f = *good;
        const chat_format *h = &holes[i].f;
        f.name = h->name ? h->name : f.name;
        f.tokenizer = h->tokenizer ? h->tokenizer : f.tokenizer;
        f.reacquire_tool = h->reacquire_tool ? h->reacquire_tool : f.reacquire_tool;
        f.media = h->media ? h->media : f.media;
        const char *why = incomplete(&f);
        check(why && strstr(why, holes[i].why) != NULL, "%s: %s", holes[i].what,
              why ? why : "taken as complete");
    }
}

/* The answer to a request naming format: 0, or -1 with err filled. */
static int decode_format(const char *format_json, compactd_error *err)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{%s\"budget\": 100, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}",
             format_json);
    chat_input in;
    int rc = chat_decode_compact(body, strlen(body), &limits, &in, err);
    chat_input_free(&in);
    return rc;
}

static void an_unknown_format_is_refused(void)
{
    static const char *const planted[] = {"\"format\": \"gemini\", ", "\"format\": \"OpenAI\", ",
                                          "\"format\": \"openai \", ", "\"format\": 3, ",
                                          "\"format\": \"openai-response\", "};
    for (size_t i = 0; i < sizeof(planted) / sizeof(planted[0]); i++) {
        compactd_error err = {0};
        check(decode_format(planted[i], &err) == -1 && err.kind == ERR_INVALID_REQUEST &&
                  strcmp(err.path, "$.format") == 0 &&
                  strcmp(err.message, "must be " CHAT_FORMATS_QUOTED) == 0,
              "%s: refused at $.format (%s: %s)", planted[i], err.path, err.message);
    }
    compactd_error err = {0};
    check(decode_format("", &err) == -1 && strcmp(err.path, "$.format") == 0 &&
              strcmp(err.message, "is required: " CHAT_FORMATS_QUOTED) == 0,
          "no format: %s", err.message);
    for (size_t i = 0; i < CHAT_FORMAT_COUNT; i++) {
        char member[64];
        snprintf(member, sizeof(member), "\"format\": \"%s\", ", chat_format_at(i)->name);
        err = (compactd_error){0};
        check(decode_format(member, &err) == 0, "%s is read: %s", chat_format_at(i)->name,
              err.message);
    }
}

int main(int argc, char **argv)
{
    char err[256];
    if (argc < 2 || tokenizer_load(argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "usage: format_cases RANKS_DIR (%s)\n", argc < 2 ? "none given" : err);
        return 2;
    }
    every_format_is_complete();
    a_planted_hole_is_named();
    an_unknown_format_is_refused();
    return check_done("format_cases");
}
