(function(){
  var shown = null;
  function hide(){
    if (!shown) return;
    shown.tip.hidden = true;
    shown.cursor.setAttribute("visibility", "hidden");
    shown = null;
  }
  function nearest(ref, x, n){
    var best = 0, dist = Infinity;
    for (var j = 0; j < n; j++) {
      var d = Math.abs(ref.points.getItem(j).x - x);
      if (d < dist) { dist = d; best = j; }
    }
    return best;
  }
  function parts(svg){
    var fig = svg.parentNode, tip = fig.querySelector(".tip"), cursor = svg.querySelector("line.cursor");
    if (!tip) {
      tip = document.createElement("div");
      tip.className = "tip";
      fig.appendChild(tip);
    }
    if (!cursor) {
      var axis = svg.querySelector("line.axis");
      cursor = document.createElementNS("http://www.w3.org/2000/svg", "line");
      cursor.setAttribute("class", "cursor");
      cursor.setAttribute("y1", "0");
      cursor.setAttribute("y2", axis ? axis.getAttribute("y1") : "0");
      svg.appendChild(cursor);
    }
    return {fig: fig, tip: tip, cursor: cursor};
  }
  function fill(tip, svg, lines, i){
    tip.textContent = "";
    var head = document.createElement("b");
    head.textContent = svg.dataset.xlabel + " " + svg.dataset.x.split(" ")[i];
    tip.appendChild(head);
    for (var k = 0; k < lines.length; k++) {
      var vs = (lines[k].dataset.v || "").split(" "), v = vs.length === 1 ? vs[0] : vs[i];
      if (v === undefined || v === "") continue;
      var row = document.createElement("div"), sw = document.createElement("i");
      sw.style.background = lines[k].getAttribute("stroke");
      row.appendChild(sw);
      row.appendChild(document.createTextNode(lines[k].dataset.series + ": " + v + " " + svg.dataset.unit));
      tip.appendChild(row);
    }
  }
  function show(e){
    var svg = e.target && e.target.closest ? e.target.closest("svg.chart") : null;
    var n = svg && svg.dataset.x ? svg.dataset.x.split(" ").length : 0;
    var lines = svg ? svg.querySelectorAll("polyline.series") : [], ref = null;
    for (var i = 0; i < lines.length && !ref; i++) {
      if (lines[i].points.numberOfItems === n) ref = lines[i];
    }
    var m = svg && svg.getScreenCTM();
    if (!ref || !m) { hide(); return; }
    var pt = svg.createSVGPoint();
    pt.x = e.clientX;
    pt.y = e.clientY;
    var at = nearest(ref, pt.matrixTransform(m.inverse()).x, n), p = parts(svg);
    if (shown && shown.tip !== p.tip) hide();
    var cx = ref.points.getItem(at).x;
    p.cursor.setAttribute("x1", cx);
    p.cursor.setAttribute("x2", cx);
    p.cursor.setAttribute("visibility", "visible");
    fill(p.tip, svg, lines, at);
    p.tip.hidden = false;
    var fr = p.fig.getBoundingClientRect(), sr = svg.getBoundingClientRect();
    var left = e.clientX - fr.left + 12;
    if (left + p.tip.offsetWidth > fr.width) left = Math.max(0, e.clientX - fr.left - 12 - p.tip.offsetWidth);
    p.tip.style.left = left + "px";
    p.tip.style.top = (sr.top - fr.top + 8) + "px";
    shown = {tip: p.tip, cursor: p.cursor};
  }
  document.addEventListener("pointermove", show);
  document.addEventListener("pointerdown", show);
  document.documentElement.addEventListener("mouseleave", hide);
})();
