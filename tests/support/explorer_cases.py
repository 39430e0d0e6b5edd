"""The explorer pages' test layouts, shared by ``test_explorer.py`` (the page's functions,
run in Node) and ``test_browser.py`` (the page in a real browser): one of each kind the
explorer draws — f32 ``T(8,128)``, bf16 ``(8,128)(2,1)``, s4 ``E(4)``, a cross-tile tile
``(2,1,1,1)`` and combined dimensions ``*``."""

FIVE = [
    "f32[20,300]{1,0:T(8,128)}",
    "bf16[20,300]{1,0:T(8,128)(2,1)}",
    "s4[70,300]{1,0:T(64,128)(8,1)E(4)}",
    "f32[8,8]{1,0:T(2,4)(2,1,1,1)}",
    "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
]
