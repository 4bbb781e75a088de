-- POSTs one body file to /v1/sessions/{session}/compact, with the session
-- varying across requests (and across wrk threads) over a pool of sessions,
-- so spills land in many sessions as they do with many agents.
-- Usage: wrk -s post_sessions.lua http://127.0.0.1:PORT -- BODY_FILE [SESSIONS] [PREFIX]
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")

local threads = 0

function setup(thread)
   thread:set("id", threads)
   threads = threads + 1
end

local body, sessions, prefix
local n = 0

function init(args)
   body = read_body(args)
   sessions = tonumber(args[2] or "1000")
   prefix = args[3] or "bench"
end

function request()
   n = n + 1
   local s = string.format("%s-%d-%d", prefix, id, n % sessions)
   return wrk.format(nil, "/v1/sessions/" .. s .. "/compact", nil, body)
end
