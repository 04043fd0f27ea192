// charts.js draws a stampede report's interactive charts with uPlot from the
// JSON of the page element "stampede-charts": hover shows every series' value at
// the cursor, dragging across a chart zooms in (double-click zooms out), and
// charts of one sync key share their cursor and their time range.
(function () {
  "use strict";
  var data = document.getElementById("stampede-charts");
  if (!data || typeof uPlot === "undefined") {
    return;
  }
  var specs = JSON.parse(data.textContent);

  // The report's one latency format (report/summary.go formatMs): three
  // significant digits, ms below a second, s below a minute, then min.
  function sig3(v) {
    var a = Math.abs(v), d = a === 0 || a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
    var t = v.toFixed(d);
    return t.indexOf(".") >= 0 ? t.replace(/0+$/, "").replace(/\.$/, "") : t;
  }
  function fmtMS(ms) {
    if (ms == null || isNaN(ms) || ms < 0) return "—";
    if (ms < 1000) return sig3(ms) + " ms";
    if (ms < 60000) return sig3(ms / 1000) + " s";
    return sig3(ms / 60000) + " min";
  }
  function fmtNum(v) {
    if (v == null || isNaN(v)) return "—";
    var a = Math.abs(v);
    return a >= 100 || v === Math.round(v) ? String(Math.round(v)) : a >= 1 ? v.toFixed(1) : v.toFixed(2);
  }
  function fmtVal(unit, v) {
    if (v == null || isNaN(v)) return "—";
    if (unit === "ms") return fmtMS(v);
    if (unit === "pct") return fmtNum(v) + "%";
    return fmtNum(v);
  }

  var groups = {}; // sync key → charts, for a shared time range
  var syncing = false;

  specs.forEach(function (s) {
    var el = document.getElementById("ichart-" + s.id);
    if (!el) return;
    var cats = s.xcats && s.xcats.length ? s.xcats : null;
    var series = [{
      label: s.xlabel,
      value: function (u, v) {
        if (v == null) return "—";
        return cats ? (cats[Math.round(v)] || "") : fmtNum(v) + " s";
      }
    }];
    s.series.forEach(function (x) {
      // A sparse series (a group with a few answers) is drawn as points,
      // which a line with gaps would not show.
      var n = 0;
      x.values.forEach(function (v) { if (v != null) n++; });
      series.push({
        label: x.label,
        stroke: x.color,
        width: 2,
        dash: x.dash ? [7, 4] : undefined,
        fill: x.fill ? x.color + "33" : undefined,
        points: { show: !!cats || n < 80, size: cats ? 8 : 6 },
        spanGaps: !!cats,
        value: function (u, v) { return fmtVal(s.yunit, v); }
      });
    });
    var thresholds = s.lines || [];
    function yRange(u, lo, hi) {
      thresholds.forEach(function (l) {
        lo = Math.min(lo, l.y);
        hi = Math.max(hi, l.y);
      });
      if (lo == null || !isFinite(lo)) { lo = 0; hi = 1; }
      if (s.logy) { // whole decades, so that the ticks fall on round values
        lo = Math.max(lo, 0.001);
        return [Math.pow(10, Math.floor(Math.log10(lo))), Math.pow(10, Math.ceil(Math.log10(Math.max(hi, lo * 2))))];
      }
      if (s.yunit === "pct") return [0, Math.min(100, Math.max(hi * 1.1, 1))];
      return [0, Math.max(hi * 1.15, 1)];
    }
    // The first view: every category with some air, or the whole run on
    // the time axis every chart shares. Set once drawn rather than as the
    // scale's range, which would undo every zoom.
    var first = cats ? [-0.4, cats.length - 0.6] : s.xmax ? [0, s.xmax] : null;
    var xAxis = { label: s.xlabel };
    if (cats) {
      xAxis.splits = function () { return cats.map(function (_, i) { return i; }); };
      xAxis.values = function (u, vals) { return vals.map(function (v) { return cats[v] || ""; }); };
    }
    var opts = {
      title: s.title,
      width: Math.max(320, el.clientWidth || 1200),
      height: s.height || 320,
      cursor: { drag: { x: true, y: false }, sync: s.sync ? { key: s.sync } : undefined },
      scales: { x: { time: false }, y: { distr: s.logy ? 3 : 1, range: yRange } },
      axes: [xAxis, {
        label: s.ylabel,
        size: 80, // the same on every chart, so that their time axes line up
        values: function (u, vals) { return vals.map(function (v) { return v == null ? "" : fmtVal(s.yunit, v); }); }
      }],
      series: series,
      hooks: {
        draw: [function (u) {
          var ctx = u.ctx, b = u.bbox, dpr = devicePixelRatio || 1;
          ctx.save();
          ctx.lineWidth = 1.5 * dpr;
          ctx.font = (11 * dpr) + "px sans-serif";
          ctx.textAlign = "right";
          thresholds.forEach(function (l) {
            var y = u.valToPos(l.y, "y", true);
            if (y < b.top || y > b.top + b.height) return;
            ctx.strokeStyle = l.color;
            ctx.fillStyle = l.color;
            ctx.setLineDash([2 * dpr, 3 * dpr]);
            ctx.beginPath();
            ctx.moveTo(b.left, y);
            ctx.lineTo(b.left + b.width, y);
            ctx.stroke();
            ctx.fillText(l.label, b.left + b.width - 4 * dpr, y - 4 * dpr);
          });
          if (s.markx != null) {
            var mx = u.valToPos(s.markx, "x", true);
            ctx.strokeStyle = "#606060";
            ctx.fillStyle = "#404040";
            ctx.setLineDash([6 * dpr, 4 * dpr]);
            ctx.beginPath();
            ctx.moveTo(mx, b.top);
            ctx.lineTo(mx, b.top + b.height);
            ctx.stroke();
            ctx.textAlign = "left";
            ctx.fillText(s.mark || "", mx + 4 * dpr, b.top + 12 * dpr);
          }
          ctx.restore();
        }],
        setScale: [function (u, key) {
          if (key !== "x" || !s.sync || syncing) return;
          syncing = true;
          (groups[s.sync] || []).forEach(function (o) {
            if (o !== u) o.setScale("x", { min: u.scales.x.min, max: u.scales.x.max });
          });
          syncing = false;
        }]
      }
    };
    var cols = [s.x].concat(s.series.map(function (x) { return x.values; }));
    var u = new uPlot(opts, cols, el);
    el.uplot = u;
    if (s.sync) (groups[s.sync] = groups[s.sync] || []).push(u);
    if (first) {
      syncing = true;
      u.setScale("x", { min: first[0], max: first[1] });
      syncing = false;
    }
  });
})();
