/* jansson's memory: a body parsed into a region reads back as jansson
 * parses it, however many blocks it takes; values added to it after the
 * parse are freed with it; one released on another thread than the one
 * that parsed it is released whole; a tree many times its body's size
 * spans many blocks; failed parses, values jansson malloc()s and
 * json_dumps() texts are ordinary. The sanitizer build's leak
 * and address checks see every case: a region value freed to malloc, or a
 * malloc()ed value left behind, fails it. */
#include "check.h"
#include "json_region.h"
#include "json_shape.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* {"items":[{"k":"<i>","v":"xxx...","n":i},...]}: n items of about
 * 40 + pad bytes each. */
static char *items_body(size_t n, size_t pad, size_t *len)
{
    size_t cap = 32 + n * (64 + pad), at = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    at += (size_t)snprintf(s + at, cap - at, "{\"items\":[");
    for (size_t i = 0; i < n; i++) {
        at += (size_t)snprintf(s + at, cap - at, "%s{\"k\":\"key%zu\",\"v\":\"", i ? "," : "", i);
        memset(s + at, 'a' + (char)(i % 26), pad);
        at += pad;
        at += (size_t)snprintf(s + at, cap - at, "\",\"n\":%zu}", i);
    }
    at += (size_t)snprintf(s + at, cap - at, "]}");
    *len = at;
    return s;
}

/* The tree reads back: every item's members as written. */
static int items_intact(const json_t *doc, size_t n, size_t pad)
{
    const json_t *items = json_object_get(doc, "items");
    if (!json_is_array(items) || json_array_size(items) != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *it = json_array_get(items, i);
        char key[32];
        snprintf(key, sizeof(key), "key%zu", i);
        const json_t *v = json_object_get(it, "v");
        if (strcmp(json_string_value(json_object_get(it, "k")), key) != 0 ||
            json_integer_value(json_object_get(it, "n")) != (json_int_t)i ||
            json_string_length(v) != pad ||
            (pad && json_string_value(v)[pad - 1] != 'a' + (char)(i % 26)))
            return 0;
    }
    return 1;
}

static void parses_in_region(void)
{
    static const struct {
        size_t n, pad;
    } sizes[] = {{0, 0}, {1, 3}, {50, 10}, {2000, 40}, {300, 5000}};
    for (size_t c = 0; c < sizeof(sizes) / sizeof(sizes[0]); c++) {
        size_t len = 0;
        char *body = items_body(sizes[c].n, sizes[c].pad, &len);
        json_error_t e;
        json_t *doc = body ? json_region_loadb(body, len, JSON_REJECT_DUPLICATES, &e) : NULL;
        check(doc && items_intact(doc, sizes[c].n, sizes[c].pad), "%zu items of %zu: parsed",
              sizes[c].n, sizes[c].pad);
        /* The tree is in a region, which holds at least the body's strings. */
        check(json_region_bytes(doc) >= len / 2, "%zu items: region of %zu bytes for %zu",
              sizes[c].n, json_region_bytes(doc), len);
        json_region_release(doc);
        free(body);
    }
}

/* Edited after the parse: removed values (region ones) are nothing to
 * free, added ones (malloc()ed) are freed by the release. */
static void edited_after_parse(void)
{
    size_t len = 0;
    char *body = items_body(40, 8, &len);
    json_t *doc = json_region_loadb(body, len, 0, NULL);
    check(doc != NULL, "edited: parsed");
    json_t *items = json_object_get(doc, "items");
    json_array_remove(items, 3);
    json_object_del(json_array_get(items, 0), "v");
    for (int i = 0; i < 100; i++) { /* past the object's first hashtable size */
        char name[16];
        snprintf(name, sizeof(name), "added%d", i);
        json_object_set_new(doc, name, json_pack("{s:s,s:[i,i]}", "x", "y", "z", i, i));
    }
    check(json_array_size(items) == 39 && !json_object_get(json_array_get(items, 0), "v") &&
              json_integer_value(
                  json_array_get(json_object_get(json_object_get(doc, "added99"), "z"), 1)) == 99,
          "edited: the edits read back");
    json_region_release(doc);
    free(body);
}

typedef struct {
    json_t *doc;
    int ok;
} handoff;

static void *release_there(void *arg)
{
    handoff *h = arg;
    h->ok = items_intact(h->doc, 500, 20);
    json_region_release(h->doc);
    return NULL;
}

/* Parsed on one thread, read and released on another (a request whose
 * commit runs on the store pool). */
static void released_elsewhere(void)
{
    size_t len = 0;
    char *body = items_body(500, 20, &len);
    handoff h = {json_region_loadb(body, len, 0, NULL), 0};
    pthread_t t;
    check(h.doc && pthread_create(&t, NULL, release_there, &h) == 0, "thread: started");
    pthread_join(t, NULL);
    check(h.ok, "thread: the other thread read the tree");
    free(body);
}

/* [[],[],...]: about 20 times its bytes as a tree, past the first block
 * (four times the body) into many more. */
static void many_blocks(void)
{
    size_t n = 20000, len = 2 + 3 * n - 1;
    char *body = malloc(len + 1);
    body[0] = '[';
    for (size_t i = 0; i < n; i++)
        memcpy(body + 1 + 3 * i, i + 1 < n ? "[]," : "[]]", 3);
    json_t *doc = json_region_loadb(body, len, 0, NULL);
    size_t empty = 0;
    for (size_t i = 0; doc && i < json_array_size(doc); i++)
        empty +=
            json_is_array(json_array_get(doc, i)) && json_array_size(json_array_get(doc, i)) == 0;
    check(doc && json_array_size(doc) == n && empty == n, "blocks: %zu empty arrays of %zu", empty,
          n);
    check(json_region_bytes(doc) > 8 * len, "blocks: region of %zu bytes for %zu",
          json_region_bytes(doc), len);
    json_region_release(doc);
    free(body);
}

/* A failed parse leaves nothing; a large body is one region too; a value
 * jansson malloc()ed is released the same way; json_dumps() texts go back
 * with json_text_free(). */
static void the_rest(void)
{
    json_error_t e;
    static const char bad[] = "{\"a\": [1, 2, {\"b\": \"unterminated";
    check(!json_region_loadb(bad, sizeof(bad) - 1, 0, &e) &&
              json_error_code(&e) == json_error_premature_end_of_input,
          "bad: jansson's error (%s)", e.text);
    static const char dup[] = "{\"a\": 1, \"a\": 2}";
    check(!json_region_loadb(dup, sizeof(dup) - 1, JSON_REJECT_DUPLICATES, &e) &&
              json_error_code(&e) == json_error_duplicate_key,
          "duplicate: jansson's error (%s)", e.text);

    size_t len = 0, n = 5000;
    char *body = items_body(n, 960, &len);
    json_t *doc = json_region_loadb(body, len, 0, NULL);
    check(doc && items_intact(doc, n, 960) && json_region_bytes(doc) >= len,
          "large: %zu bytes parsed", len);
    json_t *plain = json_loadb(body, len, 0, NULL);
    check(plain && items_intact(plain, n, 960) && json_region_bytes(plain) == 0,
          "plain: parsed with malloc()");
    json_region_release(plain);
    char *text = json_dumps(json_array_get(json_object_get(doc, "items"), 7), JSON_COMPACT);
    check(text && strncmp(text, "{\"k\":\"key7\"", 11) == 0, "dumps: %s", text ? text : "NULL");
    json_text_free(text);
    char *whole = json_dumps_plain(json_object_get(doc, "items"), JSON_COMPACT);
    check(whole && strlen(whole) == len - strlen("{\"items\":}"), "dumps_plain: the array");
    free(whole);
    json_region_release(doc);
    json_region_release(NULL);
    free(body);
}

/* The shape guard's price of a tree is never below what its region hands
 * out, and not far above: empty containers, members, long tables, every
 * kind of scalar, escapes. */
static void priced_as_built(void)
{
    size_t len;
    char *items = items_body(3000, 40, &len);
    const char *docs[] = {"{}", "[]", "{\"a\":[{},{},[],\"x\",1,2.5,true,null]}",
                          "{\"k\\u00e9y\":\"t\\n\\u00e9xt\",\"b\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}",
                          items};
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        size_t n = i == 4 ? len : strlen(docs[i]);
        json_t *doc = json_region_loadb(docs[i], n, JSON_REJECT_DUPLICATES, NULL);
        size_t used = doc ? json_region_used(doc) : 0, price = json_tree_price(docs[i], n);
        check(doc && price >= used && price <= used + used / 4 + 256,
              "doc %zu: priced %zu, the region handed out %zu", i, price, used);
        json_region_release(doc);
    }
    /* 100,000 empty objects: 216 bytes each, not the body's 3. */
    size_t n = 100000, blen = 2 + 3 * n;
    char *body = malloc(blen);
    body[0] = '[';
    for (size_t i = 0; i < n; i++)
        memcpy(body + 1 + 3 * i, i + 1 < n ? "{}," : "{}]", 3);
    json_t *doc = json_region_loadb(body, blen - 1, 0, NULL);
    size_t used = json_region_used(doc), price = json_tree_price(body, blen - 1);
    check(doc && price >= used && used > 200 * n, "empty objects: priced %zu, used %zu", price,
          used);
    json_region_release(doc);
    free(body);
    free(items);
}

int main(void)
{
    parses_in_region();
    edited_after_parse();
    released_elsewhere();
    many_blocks();
    the_rest();
    priced_as_built();
    return check_done("json_region_cases");
}
