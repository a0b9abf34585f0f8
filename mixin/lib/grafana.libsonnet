// A small Grafana dashboard builder: no library to vendor. Panels are laid
// out left to right in rows 24 columns wide; a row header starts a new line.
local ds = { type: 'prometheus', uid: '${datasource}' };

// The matchers of the mixin's `selector` other than the one on `job`.
local otherMatchers(config) =
  local m(x) = std.stripChars(x, ' ');
  local isJob(x) = std.length(m(x)) > 3 && std.startsWith(m(x), 'job') && std.member(['=', '!', '~'], m(x)[3]);
  [m(x) for x in std.split(config.selector, ',') if m(x) != '' && !isJob(x)];

local target(index, expr, legend, table) =
  {
    refId: std.char(std.codepoint('A') + index),
    datasource: ds,
    expr: expr,
    legendFormat: legend,
  } + (if table then { instant: true, format: 'table' } else {});

// Places the items (rows and panels) on the grid and numbers them.
local layout(items) =
  local step(state, item) =
    if item.type == 'row' then
      local y = state.y + (if state.x > 0 then state.lineH else 0);
      state {
        x: 0,
        y: y + 1,
        lineH: 0,
        id: state.id + 1,
        panels+: [item { id: state.id, gridPos: { h: 1, w: 24, x: 0, y: y } }],
      }
    else
      local wrap = state.x + item.w > 24;
      local x = if wrap then 0 else state.x;
      local y = if wrap then state.y + state.lineH else state.y;
      local lineH = std.max(if wrap then 0 else state.lineH, item.h);
      local full = x + item.w >= 24;
      state {
        x: if full then 0 else x + item.w,
        y: if full then y + lineH else y,
        lineH: if full then 0 else lineH,
        id: state.id + 1,
        panels+: [
          item { id: state.id, gridPos: { h: item.h, w: item.w, x: x, y: y } },
        ],
      };
  std.foldl(step, items, { x: 0, y: 0, lineH: 0, id: 1, panels: [] }).panels;

{
  datasource:: ds,

  row(title):: { type: 'row', title: title, collapsed: false, panels: [] },

  // A panel of `type` with `queries` as [expression, legend] pairs.
  panel(type, title, queries, w=12, h=8, desc='', unit=null, extra={})::
    {
      type: type,
      title: title,
      description: desc,
      datasource: ds,
      w:: w,
      h:: h,
      targets: [
        target(i, queries[i][0], queries[i][1], type == 'table')
        for i in std.range(0, std.length(queries) - 1)
      ],
      fieldConfig: {
        defaults: if unit != null then { unit: unit } else {},
        overrides: [],
      },
      options: {},
    } + extra,

  // A table of instant queries merged into one row per series, showing only
  // `columns`, in order: [field, title, properties] where field is a label
  // name, or the letter of a query ('A', 'B', …) for that query's value;
  // properties are Grafana field properties for the column ({ unit: … },
  // { mappings: … }, { custom: { cellOptions: … } }). Every other field
  // (Time, job, instance, __name__, values not listed) is left out, so no
  // column reads "Value #A".
  table(title, queries, columns, w=24, h=8, desc='', sortBy=null)::
    local single = std.length(queries) == 1;
    local field(c) =
      if std.length(c[0]) == 1 then (if single then 'Value' else 'Value #' + c[0]) else c[0];
    // Grafana names a plugin's own field options `custom.<option>`.
    local properties(c) =
      local p = if std.length(c) > 2 then c[2] else {};
      [{ id: 'displayName', value: c[1] }]
      + [{ id: key, value: p[key] } for key in std.objectFields(p) if key != 'custom']
      + (if std.objectHas(p, 'custom') then [{ id: 'custom.' + key, value: p.custom[key] } for key in std.objectFields(p.custom)] else []);
    self.panel('table', title, [[q, ''] for q in queries], w=w, h=h, desc=desc) {
      transformations:
        (if single then [] else [{ id: 'merge', options: {} }])
        + [
          { id: 'filterFieldsByName', options: { include: { names: [field(c) for c in columns] } } },
          {
            id: 'organize',
            options: {
              indexByName: { [field(columns[i])]: i for i in std.range(0, std.length(columns) - 1) },
              excludeByName: {},
              renameByName: {},
            },
          },
        ],
      fieldConfig: {
        defaults: {},
        overrides: [
          { matcher: { id: 'byName', options: field(c) }, properties: properties(c) }
          for c in columns
        ],
      },
      options: {
        frameIndex: 0,
        showHeader: true,
        cellHeight: 'sm',
        sortBy: if sortBy == null then [] else [{ displayName: sortBy, desc: false }],
      },
    },

  // Value mappings: each [value, text, color] pair shows `text` in `color`.
  valueText(pairs):: [{
    type: 'value',
    options: { [pairs[i][0]]: { text: pairs[i][1], color: pairs[i][2], index: i } for i in std.range(0, std.length(pairs) - 1) },
  }],

  // The dashboards' selector: the mixin's `selector` with its `job`
  // matcher replaced by the `job` variable, so a target scraped under any
  // job name shows, and every other matcher of `selector` (a namespace,
  // say) still narrows every query.
  selector(config)::
    std.join(',', ['job=~"$job"'] + otherMatchers(config)),

  // The `job` variable: every job that scrapes this agent (its
  // build_info), narrowed by the other matchers of `selector`; all of
  // them by default.
  jobVariable(config)::
    self.queryVariable('job', 'Job', 'zookeeper_exporter_build_info', std.join(',', otherMatchers(config))),

  // A multi-value variable listing the values of label `name` of `metric`.
  queryVariable(name, label, metric, selector)::
    local series = if selector == '' then metric else '%s{%s}' % [metric, selector];
    local query = 'label_values(%s, %s)' % [series, name];
    {
      name: name,
      label: label,
      type: 'query',
      datasource: ds,
      definition: query,
      query: { query: query, refId: 'PrometheusVariableQueryEditor-VariableQuery' },
      includeAll: true,
      multi: true,
      allValue: '.*',
      current: { selected: true, text: ['All'], value: ['$__all'] },
      refresh: 2,
      sort: 1,
      hide: 0,
    },

  dashboard(config, name, title, description, items, variables, annotations=[])::
    {
      // No __inputs: every panel reads the `datasource` variable, which
      // provisioning and the import dialog both fill; an input nothing
      // referred to only asked a question. schemaVersion 38 (tables'
      // cellOptions) is Grafana 10.0's.
      __requires: [
        { type: 'grafana', id: 'grafana', name: 'Grafana', version: '10.0.0' },
        { type: 'datasource', id: 'prometheus', name: 'Prometheus', version: '1.0.0' },
      ] + [
        { type: 'panel', id: t, name: { stat: 'Stat', table: 'Table', timeseries: 'Time series', 'state-timeline': 'State timeline' }[t], version: '' }
        for t in std.set([i.type for i in items if i.type != 'row'])
      ],
      title: title,
      uid: config.uidPrefix + name,
      description: description,
      tags: config.tags,
      timezone: config.timezone,
      schemaVersion: 38,
      version: 1,
      editable: true,
      time: { from: config.from, to: 'now' },
      refresh: config.refresh,
      graphTooltip: 1,
      templating: {
        list: [{
          name: 'datasource',
          label: 'Data source',
          type: 'datasource',
          query: 'prometheus',
          regex: config.datasourceRegex,
          hide: 0,
          refresh: 1,
        }] + variables,
      },
      annotations: { list: annotations },
      panels: layout(items),
    },
}
