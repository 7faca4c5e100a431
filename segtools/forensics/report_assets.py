"""The inline stylesheet and the one script of the HTML report (``segtools.forensics.report_html``).

The script filters and pages the lost-records table (rows built with ``textContent``, never
markup) and unpacks a collapsed partition's gzip-packed body when it is opened. Its SHA-256
is the only script the page's Content-Security-Policy allows, so edit it here and nowhere
else: the hash follows.
"""

from __future__ import annotations

CSS = """
:root{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;font-size:14px;color:#222}
body{margin:0 auto;max-width:1100px;padding:12px 20px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:22px 0 8px;border-bottom:1px solid #ddd}
.sub{color:#666;margin:0 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:12px}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:160px;background:#fafafa}
.card .n{font-size:24px;font-weight:600}
.verdict{font-size:16px;padding:8px 12px;border-radius:6px;margin:8px 0}
.verdict.bad{background:#fde0dc;border:1px solid #e57373}.verdict.ok{background:#e0f2e9;border:1px solid #81c784}
.verdict.unknown{background:#fff4d6;border:1px solid #e0b040}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;
vertical-align:top}th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:0 6px;border-radius:3px;font-size:12px;font-weight:600;background:#e0e0e0}
.badge.problem{background:#e53935;color:#fff}.badge.ok{background:#43a047;color:#fff}
.badge.info{background:#fbc02d}
details.partition{border:1px solid #ddd;border-radius:6px;margin:6px 0;padding:4px 8px}
details.partition>summary{cursor:pointer;font-weight:600}
svg{display:block;font-size:11px;max-width:100%;height:auto}
svg text{fill:#333}
rect.run{stroke:#fff;stroke-width:.5}
rect.below-log-start{fill:#f5f5f5;stroke:#ccc;stroke-dasharray:2 2}
rect.offsets-lost{fill:#d32f2f;fill-opacity:.18;stroke:#d32f2f;stroke-dasharray:3 2}
rect.divergent{fill:none;stroke:#6d4c41;stroke-width:1.5;stroke-dasharray:4 2}
rect.loss.committed,.sw.committed{fill:#d32f2f;background:#d32f2f}
rect.loss.acked,.sw.acked{fill:#f57c00;background:#f57c00}
rect.loss.unacked,.sw.unacked{fill:#9e9e9e;background:#9e9e9e}
rect.loss.relocated,.sw.relocated{fill:#7e57c2;background:#7e57c2}
rect.loss.aborted,.sw.aborted{fill:#cfd8dc;background:#cfd8dc}
line.leo{stroke:#000;stroke-width:2}line.log-start{stroke:#1565c0;stroke-width:2}
path.hw{fill:#2e7d32}line.fork{stroke:#c62828;stroke-width:2.5;stroke-dasharray:5 2}
text.fork-label{fill:#c62828;font-weight:600}text.election-label,text.broker-label{font-size:10px}text.lane-status{fill:#777;font-size:10px}
circle.election.unclean{fill:#d32f2f}circle.election.clean,circle.election.initial{fill:#2e7d32}
circle.election.offline{fill:#757575}
line.election-line{stroke:#2e7d32;stroke-dasharray:2 3}line.election-line.unclean{stroke:#d32f2f}
line.election-line.offline{stroke:#757575}rect.time-run{stroke:#fff;stroke-width:.5}circle.isr-change{fill:#1565c0}
path.broker-event{fill:#555}path.broker-event.fenced{fill:#d32f2f}path.broker-event.unfenced{fill:#2e7d32}
.sw{display:inline-block;width:12px;height:12px;vertical-align:middle;margin:0 3px 0 10px;border-radius:2px}
.legend{color:#444}
tr.committed td:first-child{border-left:4px solid #d32f2f}tr.acked td:first-child{border-left:4px solid #f57c00}
tr.unacked td:first-child{border-left:4px solid #9e9e9e}tr.relocated td:first-child{border-left:4px solid #7e57c2}
tr.aborted td:first-child{border-left:4px solid #cfd8dc}
td.kv{font-family:ui-monospace,monospace;max-width:320px;overflow-wrap:anywhere}
.evidence{font-family:ui-monospace,monospace;font-size:12px}
#lost-controls{display:flex;gap:8px;align-items:center;flex-wrap:wrap}
#lost-filter{width:320px;padding:3px}
.muted{color:#777}
"""

SCRIPT = """
(function(){
"use strict";
var data=JSON.parse(document.getElementById("lost-data").textContent);
var rows=data.rows,size=200,page=0,view=rows,hay=new Array(rows.length);
var box=document.getElementById("lost-filter"),sel=document.getElementById("lost-class");
var body=document.getElementById("lost-body"),info=document.getElementById("lost-info");
var prev=document.getElementById("lost-prev"),next=document.getElementById("lost-next");
var CLS=["committed","acked","unacked","relocated","aborted"];
function txt(v){return v===null||v===undefined?"":String(v);}
function text(i){if(hay[i]===undefined){var r=rows[i];
hay[i]=(r[0]+" "+r[1]+" "+r[2]+" "+r[3]+" "+txt(r[4])+" "+txt(r[5])).toLowerCase();}return hay[i];}
function apply(){var terms=box.value.toLowerCase().split(/\\s+/).filter(Boolean),c=sel.value,out=[];
for(var i=0;i<rows.length;i++){if(c&&CLS[rows[i][6]]!==c)continue;var h=text(i),ok=true;
for(var t=0;t<terms.length;t++){if(h.indexOf(terms[t])<0){ok=false;break;}}if(ok)out.push(rows[i]);}
view=out;page=0;render();}
function cell(tr,v,cls){var td=document.createElement("td");td.textContent=txt(v);if(cls)td.className=cls;tr.appendChild(td);}
function render(){var f=document.createDocumentFragment(),a=page*size,b=Math.min(view.length,a+size);
for(var i=a;i<b;i++){var r=view[i],tr=document.createElement("tr");tr.className=CLS[r[6]];
cell(tr,r[0]);cell(tr,r[1],"num");cell(tr,r[2],"num");cell(tr,r[3],"num");cell(tr,r[4],"kv");cell(tr,r[5],"kv");
cell(tr,CLS[r[6]]);cell(tr,r[7]===null?"unknown":(r[7]?"yes":"no"));cell(tr,r[8]);cell(tr,r[9]);f.appendChild(tr);}
body.textContent="";body.appendChild(f);
info.textContent=(view.length?(a+1)+"\\u2013"+b:"0")+" of "+view.length+
(view.length!==rows.length?" (filtered from "+rows.length+")":"");
info.setAttribute("data-shown",String(b-a));info.setAttribute("data-matching",String(view.length));
prev.disabled=page===0;next.disabled=b>=view.length;}
box.addEventListener("input",apply);sel.addEventListener("change",apply);
prev.addEventListener("click",function(){if(page>0){page--;render();}});
next.addEventListener("click",function(){if((page+1)*size<view.length){page++;render();}});
document.addEventListener("click",function(e){var a=e.target.closest&&e.target.closest("a.lost-link");
if(a){box.value=a.getAttribute("data-filter");sel.value="";apply();}});
var chunks={};
function chunk(k){if(!chunks[k]){var s=atob(document.getElementById("lazy-"+k).textContent),u=new Uint8Array(s.length);
for(var i=0;i<s.length;i++)u[i]=s.charCodeAt(i);
chunks[k]=new Response(new Blob([u]).stream().pipeThrough(new DecompressionStream("gzip"))).text().then(JSON.parse);}
return chunks[k];}
document.addEventListener("toggle",function(e){var d=e.target;if(!d.open||!d.classList||
!d.classList.contains("partition"))return;var ph=d.querySelector(":scope>div.lazy");
if(!ph||ph.getAttribute("data-loading"))return;ph.setAttribute("data-loading","1");
var i=+ph.getAttribute("data-lazy"),n=+ph.getAttribute("data-chunk-size");
chunk(Math.floor(i/n)).then(function(a){ph.innerHTML=a[i%n];ph.className="body";})
.catch(function(err){ph.textContent="could not unpack this partition: "+err;});},true);
function all(open){var d=document.querySelectorAll("details.partition");for(var i=0;i<d.length;i++)d[i].open=open;}
document.getElementById("expand-all").addEventListener("click",function(){all(true);});
document.getElementById("collapse-all").addEventListener("click",function(){all(false);});
render();
})();
"""
