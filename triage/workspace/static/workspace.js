// The workspace's only script: remember the sheriff's name in this browser and
// send it with every decision. Everything else works without JavaScript (the
// header's form then stores the name, as a cookie, with its own button).
"use strict";
(function () {
  var KEY = "triage-sheriff";
  var input = document.getElementById("sheriff");
  if (!input) { return; }
  var saved = "";
  try { saved = window.localStorage.getItem(KEY) || ""; } catch (e) { saved = ""; }
  // Nothing saved here: keep the name the page came with (stored by the header's form, a cookie).
  if (saved) { input.value = saved; }
  function fill() {
    var fields = document.querySelectorAll("input.who");
    for (var i = 0; i < fields.length; i++) { fields[i].value = input.value.trim(); }
  }
  input.addEventListener("input", function () {
    try { window.localStorage.setItem(KEY, input.value.trim()); } catch (e) { /* private mode: keep it for this page */ }
    fill();
  });
  fill();
})();
