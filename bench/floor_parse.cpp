// The parse-limit floors (floor_parse, with floor.c's HTTP side): each body
// is parsed with simdjson's DOM parser, about the fastest JSON parser there
// is, and every unit's key, class, tokens and text is read, which is the
// least any server must do with a compaction request before planning it.
//
// With --spill-redis it is the spill floor: it also picks the protected
// units a plan externalizes (gen_bodies.py's protected_plan: the largest
// saving first, until the protected units fit the budget) and stores their
// texts in the session's Redis hash in one pipelined round trip. It makes
// the promise compactd's commit makes about the texts, as cheaply as Redis
// allows: a text this process has not seen stored in the session is
// written (HSET), one it has is only checked to be there (HEXISTS), as
// compactd leaves out the texts it saw acknowledged (store/known_spills.c)
// and its script checks they are there; one found missing is written in a
// second round trip. Neither the texts' metadata nor a decision-log entry
// is written. Bench only: never linked into compactd.
#include "floor_hook.h"

#include <hiredis/hiredis.h>
#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

static_assert(FLOOR_HOOK_PADDING >= simdjson::SIMDJSON_PADDING,
              "floor.c must pad bodies as simdjson reads past them");

namespace
{

// A pointer costs its key's bytes plus this (service/core/pointer.h).
constexpr int64_t POINTER_OVERHEAD = 39;

struct unit {
    std::string_view key;
    std::string_view text;
    int64_t tokens = 0;
    bool is_protected = false;
    bool has_text = false;
};

struct spill {
    int64_t saving;
    size_t index;
    uint64_t tag;                      // the session and key, for the seen-stored table
    enum { SEND, CHECK, MISSING } how; // HSET its text; HEXISTS; HSET after a check failed
};

// The (session, key) tags this process saw stored, direct-mapped like
// compactd's table and of its size: a collision only costs a text resent.
constexpr size_t STORED_SLOTS = size_t(1) << 16;
std::atomic<uint64_t> stored[STORED_SLOTS];

uint64_t tag_of(std::string_view session, std::string_view key)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : session)
        h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
    for (unsigned char c : key)
        h = (h ^ c) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h ? h : 1; // 0 marks an empty slot
}

// Set once by the options, before the threads start.
std::string redis_host;
int redis_port = 0;

// Per libmicrohttpd thread, kept from request to request as a server would.
thread_local simdjson::dom::parser parser;
thread_local std::vector<unit> units;
thread_local std::vector<spill> spills;
thread_local redisContext *redis = nullptr;

// The first body's figures go to the log once, for bench/run to check
// against the generator's manifest that the floor read and wrote it all.
std::atomic<bool> reported{false};

// ---- Reading the body ----

// Reads one unit's fields in one pass over its members. Returns false on a
// field of the wrong type or a missing key, class or tokens.
bool read_unit(simdjson::dom::element el, unit &u)
{
    simdjson::dom::object obj;
    if (el.get_object().get(obj))
        return false;
    bool has_key = false, has_class = false, has_tokens = false;
    for (auto field : obj) {
        std::string_view name = field.key;
        if (name == "key") {
            if (field.value.get_string().get(u.key))
                return false;
            has_key = true;
        } else if (name == "class") {
            std::string_view cls;
            if (field.value.get_string().get(cls))
                return false;
            u.is_protected = cls == "protected";
            has_class = true;
        } else if (name == "tokens") {
            if (field.value.get_int64().get(u.tokens))
                return false;
            has_tokens = true;
        } else if (name == "text") {
            if (field.value.get_string().get(u.text))
                return false;
            u.has_text = true;
        }
    }
    return has_key && has_class && has_tokens;
}

// Parses body into the thread's units; sets budget. Returns false on any
// error, as a bad request.
bool read_body(const char *body, size_t len, int64_t &budget)
{
    simdjson::dom::element doc;
    if (parser.parse(body, len, false).get(doc))
        return false;
    simdjson::dom::array list;
    if (doc["units"].get_array().get(list) || doc["budget"].get_int64().get(budget))
        return false;
    units.clear();
    for (auto el : list) {
        unit u;
        if (!read_unit(el, u))
            return false;
        units.push_back(u);
    }
    return true;
}

// ---- The spill floor ----

// Fills the thread's spills with the protected units to externalize, in
// the generator's order: largest saving first, ties earliest.
void pick_spills(int64_t budget)
{
    spills.clear();
    int64_t cost = 0;
    for (size_t i = 0; i < units.size(); i++) {
        const unit &u = units[i];
        if (!u.is_protected)
            continue;
        cost += u.tokens;
        int64_t saving = u.tokens - (int64_t)u.key.size() - POINTER_OVERHEAD;
        if (saving > 0 && u.has_text)
            spills.push_back({saving, i, 0, spill::SEND});
    }
    std::sort(spills.begin(), spills.end(), [](const spill &a, const spill &b) {
        return a.saving != b.saving ? a.saving > b.saving : a.index < b.index;
    });
    size_t n = 0;
    while (n < spills.size() && cost > budget)
        cost -= spills[n++].saving;
    spills.resize(n);
}

// "/v1/sessions/{s}/compact" -> s; anything else -> "-".
std::string_view session_of(const char *url)
{
    static constexpr std::string_view prefix = "/v1/sessions/";
    std::string_view u(url);
    if (u.substr(0, prefix.size()) != prefix)
        return "-";
    u.remove_prefix(prefix.size());
    return u.substr(0, u.find('/'));
}

bool connect_redis()
{
    if (redis)
        return true;
    struct timeval tv = {5, 0};
    redis = redisConnectWithTimeout(redis_host.c_str(), redis_port, tv);
    if (!redis || redis->err) {
        std::fprintf(stderr, "floor: cannot connect to Redis: %s\n",
                     redis ? redis->errstr : "out of memory");
        if (redis)
            redisFree(redis);
        redis = nullptr;
        return false;
    }
    redisSetTimeout(redis, tv);
    return true;
}

// Appends one HSET of the spill's text, or an HEXISTS of its field.
bool append_spill(const std::string &hash, const spill &s)
{
    const unit &u = units[s.index];
    bool check = s.how == spill::CHECK;
    const char *argv[4] = {check ? "HEXISTS" : "HSET", hash.data(), u.key.data(), u.text.data()};
    size_t lens[4] = {std::strlen(argv[0]), hash.size(), u.key.size(), u.text.size()};
    return redisAppendCommandArgv(redis, check ? 3 : 4, argv, lens) == REDIS_OK;
}

// Sends, in one pipeline, every spill (first) or the ones found MISSING,
// and reads every reply; a CHECK whose field is not there becomes MISSING
// and is counted in *missing. Returns false on a Redis error.
bool round_trip(const std::string &hash, bool first, size_t *missing)
{
    auto wanted = [first](const spill &s) { return first || s.how == spill::MISSING; };
    for (const spill &s : spills)
        if (wanted(s) && !append_spill(hash, s))
            return false;
    for (spill &s : spills) {
        if (!wanted(s))
            continue;
        void *reply = nullptr;
        if (redisGetReply(redis, &reply) != REDIS_OK)
            return false;
        const redisReply *r = static_cast<const redisReply *>(reply);
        bool bad = r->type != REDIS_REPLY_INTEGER;
        if (!bad && s.how == spill::CHECK && r->integer == 0) {
            s.how = spill::MISSING;
            (*missing)++;
        }
        freeReplyObject(reply);
        if (bad)
            return false;
    }
    return true;
}

// Stores the spills' texts in one round trip (two when a text thought
// stored is not there), then remembers them as stored. Returns false (and
// drops the connection) on any error.
bool write_spills(const char *url)
{
    if (spills.empty())
        return true;
    if (!connect_redis())
        return false;
    std::string_view session = session_of(url);
    std::string hash = "floor:{";
    hash.append(session);
    hash.append("}:text");
    for (spill &s : spills) {
        s.tag = tag_of(session, units[s.index].key);
        bool seen = stored[s.tag & (STORED_SLOTS - 1)].load(std::memory_order_relaxed) == s.tag;
        s.how = seen ? spill::CHECK : spill::SEND;
    }
    size_t missing = 0;
    bool ok = round_trip(hash, true, &missing);
    if (ok && missing)
        ok = round_trip(hash, false, &missing);
    if (!ok) {
        std::fprintf(stderr, "floor: Redis failed: %s\n",
                     redis->err ? redis->errstr : "error reply");
        redisFree(redis);
        redis = nullptr;
        return false;
    }
    for (const spill &s : spills)
        stored[s.tag & (STORED_SLOTS - 1)].store(s.tag, std::memory_order_relaxed);
    return true;
}

void report_once()
{
    if (reported.load(std::memory_order_relaxed) || reported.exchange(true))
        return;
    size_t text_bytes = 0, spill_bytes = 0, sent = 0;
    int64_t tokens = 0;
    for (const unit &u : units) {
        text_bytes += u.text.size();
        tokens += u.tokens;
    }
    for (const spill &s : spills) {
        spill_bytes += units[s.index].text.size();
        sent += s.how != spill::CHECK;
    }
    std::fprintf(stderr,
                 "floor: first body: units %zu tokens %lld text_bytes %zu spilled %zu "
                 "spill_bytes %zu texts_sent %zu\n",
                 units.size(), (long long)tokens, text_bytes, spills.size(), spill_bytes, sent);
}

} // namespace

// ---- floor_hook.h ----

extern "C" int floor_hook_option(const char *name, const char *value)
{
    if (std::strcmp(name, "--spill-redis") != 0)
        return 0;
    const char *colon = value ? std::strrchr(value, ':') : nullptr;
    if (!colon || colon == value)
        return -1;
    char *end;
    long port = std::strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || port <= 0 || port > 65535)
        return -1;
    redis_host.assign(value, (size_t)(colon - value));
    redis_port = (int)port;
    return 1;
}

extern "C" const char *floor_hook_name(void)
{
    return redis_port ? "spill" : "parse";
}

extern "C" int floor_hook_body(const char *url, const char *body, size_t len)
{
    int64_t budget = 0;
    if (!read_body(body, len, budget))
        return FLOOR_HOOK_BAD_BODY;
    if (redis_port) {
        pick_spills(budget);
        if (!write_spills(url))
            return FLOOR_HOOK_UNAVAILABLE;
    } else {
        spills.clear();
    }
    report_once();
    return FLOOR_HOOK_OK;
}
