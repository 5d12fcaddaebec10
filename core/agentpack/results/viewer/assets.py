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
span.badge{display:inline-block;white-space:nowrap;padding:0 .45rem;border-radius:1rem;font-size:.75rem;
font-weight:700;color:#fff}
.badge.pass{background:var(--pass)}.badge.fail{background:var(--fail)}.badge.error{background:var(--error)}
.badge.warn{background:var(--warn)}.badge.skip{background:var(--skip)}.badge.info{background:var(--info)}
.pass{color:var(--pass)}.fail{color:var(--fail)}.error{color:var(--error)}.warn{color:var(--warn)}
.info{color:var(--info)}.muted{color:var(--muted)}
pre{white-space:pre-wrap;overflow-wrap:break-word;word-break:normal;background:var(--soft);
border:1px solid var(--line);padding:.5rem;border-radius:6px;max-height:28rem;overflow:auto;margin:.2rem 0 .6rem;
font-size:12.5px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:.5rem 0 1rem}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere;min-width:0}
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
.side{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1rem}
.side>div{min-width:0;overflow-x:auto}
.totals span{margin-right:1rem}
.run-head{display:flex;justify-content:space-between;align-items:flex-start;gap:1rem}
.score{text-align:right;border:1px solid var(--line);border-radius:6px;padding:.4rem .8rem;min-width:10rem}
.score .big{font-size:1.6rem;font-weight:700;line-height:1.2}
p.headline{font-weight:600;margin:.2rem 0 .6rem}
table.case-table td{overflow-wrap:break-word;word-break:normal}
table.case-table .cell-text{max-height:6.5em;overflow:hidden;white-space:pre-wrap;min-width:8rem}
table.case-table td.num{white-space:nowrap;text-align:right}
table.case-table th button.sort{border:0;background:none;font-weight:600;padding:0;cursor:pointer}
table.case-table th[aria-sort=ascending] button.sort::after{content:" \\25B2"}
table.case-table th[aria-sort=descending] button.sort::after{content:" \\25BC"}
table.assertions{table-layout:fixed}table.assertions col.c-status{width:6rem}
table.assertions col.c-check{width:18%}table.assertions col.c-msg{width:18%}
.diff pre.word-diff{white-space:pre-wrap}
del+ins,ins+del{margin-left:.25em}
del{background:#ffebe9;color:#82071e;text-decoration:line-through}ins{background:#dafbe1;color:#116329;text-decoration:none}
table.json-diff code{white-space:pre-wrap;overflow-wrap:break-word}
details#run-metadata{margin-top:2rem;border-top:1px solid var(--line);padding-top:.6rem}
details#run-metadata>summary{font-weight:600;cursor:pointer}
#runs td{white-space:nowrap}#runs td.run-input,#runs td.run-name{white-space:normal;overflow-wrap:anywhere}
.pager{display:flex;gap:1rem;align-items:center;margin:.6rem 0}
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
  var pick=function(id){var e=document.getElementById(id);return e?e.value:'';};
  if(box&&only){
    var rows=[].slice.call(document.querySelectorAll('[data-row]'));
    var blocks=[].slice.call(document.querySelectorAll('[data-case]'));
    var apply=function(){
      var q=box.value.toLowerCase(),want=pick('case-status'),suite=pick('case-suite'),tagged=pick('case-tag');
      var fits=function(e){
        var st=e.getAttribute('data-status'),bad=st==='failed'||st==='error';
        if(only.checked&&!bad){return false;}
        if(want&&!(want==='failing'?bad:st===want)){return false;}
        if(suite&&e.getAttribute('data-suite')!==suite){return false;}
        if(tagged&&(' '+(e.getAttribute('data-tags')||'')+' ').indexOf(' '+tagged+' ')<0){return false;}
        return e.textContent.toLowerCase().indexOf(q)>=0;
      };
      var shown=0,keep={};
      rows.forEach(function(e){
        var v=fits(e);e.style.display=v?'':'none';if(v){shown++;keep[e.getAttribute('data-row')]=1;}
      });
      blocks.forEach(function(e){
        var follows=rows.length&&e.tagName==='DETAILS';
        var v=follows?keep[e.getAttribute('data-case')]===1:fits(e);
        e.style.display=v?'':'none';if(v&&!follows){shown++;}
      });
      var count=document.getElementById('case-count');if(count){count.textContent=shown+' shown';}
    };
    box.addEventListener('input',apply);only.addEventListener('change',apply);
    ['case-status','case-suite','case-tag'].forEach(function(id){
      var e=document.getElementById(id);if(e){e.addEventListener('change',apply);}
    });
    apply();
  }
  var reveal=function(){
    var target=location.hash?document.getElementById(location.hash.slice(1)):null;
    if(target&&target.tagName==='DETAILS'){target.open=true;target.scrollIntoView();}
  };
  window.addEventListener('hashchange',reveal);reveal();
  document.querySelectorAll('table.case-table').forEach(function(table){
    table.querySelectorAll('button.sort').forEach(function(button,col){
      button.addEventListener('click',function(){
        var kind=button.getAttribute('data-sort'),th=button.parentNode;
        var down=th.getAttribute('aria-sort')==='ascending';
        table.querySelectorAll('th').forEach(function(h){h.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',down?'descending':'ascending');
        var body=table.tBodies[0],list=[].slice.call(body.rows);
        var value=function(r){
          var c=r.cells[col],v=c.getAttribute('data-value');
          if(kind==='text'){return (v||c.textContent).toLowerCase();}
          return parseFloat(v);
        };
        list.sort(function(a,b){
          var x=value(a),y=value(b),o=x<y?-1:(x>y?1:0);return down?-o:o;
        });
        list.forEach(function(r){body.appendChild(r);});
      });
    });
  });
})();
"""
