-- Shared by the bench's wrk scripts: reads the body file named by the first
-- script argument, and prints one parseable result line when wrk is done:
--   BENCH_RESULT {"requests":..,"rps":..,"p50_ms":..,"p99_ms":..,...}

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

function read_body(args)
   local name = args[1]
   if not name then
      error("usage: wrk -s SCRIPT URL -- BODY_FILE [...]")
   end
   local f = assert(io.open(name, "rb"))
   local body = f:read("*a")
   f:close()
   return body
end

local function ms(us)
   return string.format("%.3f", us / 1000)
end

function done(summary, latency, requests)
   local e = summary.errors
   local secs = summary.duration / 1e6
   io.write(string.format(
      'BENCH_RESULT {"requests":%d,"duration_s":%.3f,"rps":%.1f,' ..
      '"p50_ms":%s,"p90_ms":%s,"p99_ms":%s,"mean_ms":%s,"max_ms":%s,"bytes_read":%d,' ..
      '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
      summary.requests, secs, summary.requests / secs,
      ms(latency:percentile(50)), ms(latency:percentile(90)), ms(latency:percentile(99)),
      ms(latency.mean), ms(latency.max), summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout))
end
