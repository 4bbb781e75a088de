-- POSTs one body file to the URL's path on every request.
-- Usage: wrk -s post.lua http://127.0.0.1:PORT/v1/sessions/S/compact -- BODY_FILE
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "report.lua")

function init(args)
   wrk.body = read_body(args)
end
