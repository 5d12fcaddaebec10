"""The viewer's stylesheet and script, bundled in the package (no CDN: the viewer works offline)."""

from __future__ import annotations

CSS = """
:root{--pass:#1a7f37;--fail:#cf222e;--error:#8250df;--warn:#9a6700;--skip:#6e7781;--info:#0969da;
--line:#d0d7de;--soft:#f6f8fa;--ink:#1f2328;--muted:#57606a}
*{box-sizing:border-box}
body{font:14px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:var(--ink);background:#fff}
header.top{display:flex;gap:1.5rem;align-items:center;padding:.6rem 1.5rem;background:#24292f;color:#fff}
header.top a{color:#fff;text-decoration:none;font-weight:600}header.top .brand{font-size:1.05rem}
header.top small{color:#afb8c1;margin-left:auto}
main{padding:1rem 1.5rem 3rem;max-width:1200px}
h1{font-size:1.35rem;margin:.4rem 0 1rem}h2{font-size:1.1rem;margin:1.6rem 0 .6rem}h3{font-size:1rem}
a{color:#0969da}
table{border-collapse:collapse;width:100%;margin:.4rem 0 1rem}
th,td{border-bottom:1px solid var(--line);padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600;white-space:nowrap}
tr.regressed td{background:#ffebe9}tr.fixed td{background:#dafbe1}
span.badge{display:inline-block;padding:0 .45rem;border-radius:1rem;font-size:.75rem;font-weight:700;color:#fff}
.badge.pass{background:var(--pass)}.badge.fail{background:var(--fail)}.badge.error{background:var(--error)}
.badge.warn{background:var(--warn)}.badge.skip{background:var(--skip)}.badge.info{background:var(--info)}
.pass{color:var(--pass)}.fail{color:var(--fail)}.error{color:var(--error)}.warn{color:var(--warn)}
.info{color:var(--info)}.muted{color:var(--muted)}
pre{white-space:pre-wrap;word-break:break-word;background:var(--soft);border:1px solid var(--line);padding:.5rem;
border-radius:6px;max-height:28rem;overflow:auto;margin:.2rem 0 .6rem;font-size:12.5px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:.5rem 0 1rem}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;word-break:break-all}
details.case{border:1px solid var(--line);border-radius:6px;margin:.4rem 0;padding:.3rem .6rem}
details.case[open]{padding-bottom:.6rem}details.case summary{cursor:pointer}
details.case.failing{border-color:#ff8182}
.label{font-weight:600;color:var(--muted);font-size:.8rem;margin-top:.4rem}
.step{border-left:3px solid var(--line);padding-left:.6rem;margin:.5rem 0}
.banner{border:1px solid var(--fail);background:#ffebe9;border-radius:6px;padding:.6rem .8rem;margin:.6rem 0}
.banner.ok{border-color:var(--pass);background:#dafbe1}.banner.note{border-color:var(--line);background:var(--soft)}
.charts{display:flex;flex-wrap:wrap;gap:1.5rem;align-items:flex-start}
.charts figure{margin:0}.charts figcaption{font-size:.8rem;color:var(--muted)}
form.filters{display:flex;flex-wrap:wrap;gap:.6rem;align-items:flex-end;background:var(--soft);padding:.6rem;
border-radius:6px;border:1px solid var(--line)}
form.filters label{display:flex;flex-direction:column;font-size:.8rem;color:var(--muted)}
input,select,button{font:inherit;padding:.2rem .4rem}
button{cursor:pointer}
.toolbar{display:flex;gap:.8rem;align-items:center;margin:.6rem 0}
.cells span{display:inline-block;width:14px;height:14px;margin-right:2px;border-radius:2px}
.cells .passed{background:var(--pass)}.cells .failed{background:var(--fail)}.cells .error{background:var(--error)}
.cells .absent{background:var(--line)}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
.empty{padding:2rem;text-align:center;color:var(--muted);border:1px dashed var(--line);border-radius:6px}
"""

JS = """
(function(){
  var compare=document.getElementById('compare-selected');
  if(compare){
    var boxes=[].slice.call(document.querySelectorAll('input.pick'));
    var picked=function(){
      return boxes.filter(function(b){return b.checked;}).map(function(b){return parseInt(b.value,10);})
        .sort(function(x,y){return x-y;});
    };
    var sync=function(){
      var ids=picked();
      compare.disabled=ids.length!==2;
      compare.textContent=ids.length===2?'Compare #'+ids[0]+' \u2192 #'+ids[1]:'Compare (pick two runs)';
    };
    boxes.forEach(function(b){b.addEventListener('change',sync);});
    compare.addEventListener('click',function(){
      var ids=picked();
      if(ids.length===2){window.location.href='/compare?a='+ids[0]+'&b='+ids[1];}
    });
    sync();
  }
  var box=document.getElementById('case-filter'),only=document.getElementById('failures-only');
  if(box&&only){
    var apply=function(){
      var q=box.value.toLowerCase(),shown=0;
      document.querySelectorAll('[data-case]').forEach(function(e){
        var hit=e.textContent.toLowerCase().indexOf(q)>=0;
        var bad=e.getAttribute('data-status')==='failed'||e.getAttribute('data-status')==='error';
        var visible=hit&&(!only.checked||bad);
        e.style.display=visible?'':'none';if(visible){shown++;}
      });
      var count=document.getElementById('case-count');if(count){count.textContent=shown+' shown';}
    };
    box.addEventListener('input',apply);only.addEventListener('change',apply);apply();
  }
})();
"""
