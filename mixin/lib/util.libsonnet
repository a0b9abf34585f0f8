// Helpers of the mixin: readable durations for alert text, and a YAML
// writer whose key order reads like a hand-written rules file (std's
// manifestYamlDoc sorts keys and, in jsonnet 0.18, quotes them).
local order = [
  'apiVersion', 'kind', 'metadata', 'spec',
  'name', 'namespace', 'groups', 'interval',
  'rules', 'record', 'alert', 'expr', 'for', 'labels', 'annotations',
  'summary', 'description', 'runbook_url',
  'route', 'receiver', 'group_by', 'routes', 'matchers', 'receivers', 'inhibit_rules',
  'source_matchers', 'target_matchers', 'equal',
];

local rank(key) =
  local found = std.find(key, order);
  if std.length(found) > 0 then found[0] else std.length(order);

// Character sets as objects: a field lookup per character (std.findSubstr
// per character made a rules file take minutes in jsonnet 0.18).
local set(chars) = { [c]: true for c in std.stringChars(chars) };
local letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
local keyChars = set(letters + '0123456789_./-');
local wordChars = set(letters + '0123456789_.-');
local digits = set('0123456789');
local only(s, chars) = std.length([c for c in std.stringChars(s) if !std.objectHas(chars, c)]) == 0;

local plainKey(key) = std.length(key) > 0 && only(key, keyChars);

// A short word YAML reads back as the same string (not a bool, null or number).
local plainWord(s) =
  std.length(s) > 0 && std.length(s) <= 64 &&
  std.objectHas(set(letters), s[0]) && only(s, wordChars) &&
  !std.member(['true', 'false', 'yes', 'no', 'on', 'off', 'null', 'y', 'n'], std.asciiLower(s));

// A Prometheus duration such as 30s or 15m.
local duration(s) =
  std.length(s) > 1 && std.length(s) <= 8 &&
  std.objectHas(set('smhdwy'), s[std.length(s) - 1]) &&
  only(s[:std.length(s) - 1], digits);

// A double-quoted YAML (and JSON) string. Only backslash, quote, newline and
// tab occur in the mixin's text; std.escapeStringJson is slow in 0.18.
local quoted(s) =
  '"' + std.strReplace(std.strReplace(std.strReplace(std.strReplace(
    s, '\\', '\\\\'), '"', '\\"'), '\n', '\\n'), '\t', '\\t') + '"';

local scalar(v) =
  if std.isString(v) then (if plainWord(v) || duration(v) then v else quoted(v))
  else if std.isBoolean(v) then (if v then 'true' else 'false')
  else if v == null then 'null'
  else std.toString(v);

local isEmpty(v) = (std.isObject(v) || std.isArray(v)) && std.length(v) == 0;

local keys(o) = std.sort(std.objectFields(o), function(k) '%03d%s' % [rank(k), k]);

local lines(v, indent) =
  local pad = std.repeat(' ', indent);
  if std.isObject(v) then
    std.flattenArrays([
      local k = if plainKey(key) then key else quoted(key);
      local x = v[key];
      if isEmpty(x) then ['%s%s: %s' % [pad, k, if std.isArray(x) then '[]' else '{}']]
      else if std.isObject(x) then ['%s%s:' % [pad, k]] + lines(x, indent + 2)
      else if std.isArray(x) then ['%s%s:' % [pad, k]] + lines(x, indent + 2)
      else ['%s%s: %s' % [pad, k, scalar(x)]]
      for key in keys(v)
    ])
  else if std.isArray(v) then
    std.flattenArrays([
      if isEmpty(item) || !(std.isObject(item) || std.isArray(item)) then
        ['%s- %s' % [pad, if isEmpty(item) then (if std.isArray(item) then '[]' else '{}') else scalar(item)]]
      else
        local inner = lines(item, indent + 2);
        ['%s- %s' % [pad, std.lstripChars(inner[0], ' ')]] + inner[1:]
      for item in v
    ])
  else [pad + scalar(v)];

{
  // Mean request latency (ms) of each server over the last `window`, by
  // operation: ZooKeeper 3.6+ reports read and update latency as summaries,
  // whose _sum and _count rates give the recent mean (zk_avg_latency is the
  // mean since the server started or `srst`, so it shows an hour-old storm
  // today and hides one starting now). A server without the summaries
  // (3.4, 3.5) falls back to that since-start mean, op="since_start".
  // Summed over agent replicas: both rates double, the ratio stays. Only
  // where at least `minRate` requests per second were measured, so a lone
  // slow request on an idle server is no trend.
  recentLatency(selector, window, minRate=0)::
    local op(name, label) =
      local count = 'sum by (ensemble, server) (rate(zookeeper_%s_count{%s}[%s]))' % [name, selector, window];
      'label_replace(sum by (ensemble, server) (rate(zookeeper_%s_sum{%s}[%s])) / %s and %s > %s, "op", "%s", "", "")'
      % [name, selector, window, count, count, minRate, label];
    '(%s or %s or label_replace(max by (ensemble, server) (zookeeper_latency_avg{%s}) unless on (ensemble, server) zookeeper_readlatency_count{%s}, "op", "since_start", "", ""))'
    % [op('readlatency', 'read'), op('updatelatency', 'update'), selector, selector],

  // '30s' -> '30 seconds', '1m' -> 'a minute', '15m' -> '15 minutes', '1h' -> 'an hour'.
  human(d)::
    local unit = d[std.length(d) - 1];
    local n = std.parseInt(d[:std.length(d) - 1]);
    local name = { s: 'second', m: 'minute', h: 'hour', d: 'day' }[unit];
    if n == 1 then (if unit == 'h' then 'an ' else 'a ') + name
    else '%d %ss' % [n, name],

  // Seconds in a Prometheus duration of one unit ('90s', '2m', '1h').
  seconds(d)::
    local unit = d[std.length(d) - 1];
    std.parseInt(d[:std.length(d) - 1]) * { s: 1, m: 60, h: 3600, d: 86400 }[unit],

  // The duration of `n` seconds in its largest whole unit, as `human` reads it.
  humanSeconds(n)::
    self.human(if n % 3600 == 0 then '%dh' % (n / 3600)
               else if n % 60 == 0 then '%dm' % (n / 60)
               else '%ds' % n),

  // A YAML document (no leading ---) ending in a newline.
  yaml(v):: std.join('\n', lines(v, 0)) + '\n',
}
