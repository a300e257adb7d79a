//! A minimal WebDriver client for the browser test: chromedriver started on a free port, W3C WebDriver's JSON over HTTP/1.1 on a plain `std::net` socket (no HTTP or WebDriver crate), headless Chromium with the flags that work on a closed network.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The key W3C WebDriver gives an element reference under.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Chromium's flags: headless, and nothing that reaches for the network on its own (this machine
/// and CI may have none); a fresh profile in `profile_dir`.
fn chromium_args(profile_dir: &Path) -> Vec<String> {
    [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("--user-data-dir={}", profile_dir.display())])
    .collect()
}

/// The first of `names` found on PATH.
fn on_path(names: &[&str]) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

/// A chromedriver process and one browser session in it; both end when this is dropped.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium whose browser console is logged at every level.
    pub fn start(profile_dir: &Path) -> Browser {
        let chromedriver = on_path(&["chromedriver"]).expect(
            "chromedriver is not on PATH: install Debian's chromium and chromium-driver (.ci/run does)",
        );
        let chromium = on_path(&["chromium", "chromium-browser", "google-chrome"])
            .expect("no Chromium on PATH: install Debian's chromium (.ci/run does)");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting chromedriver");
        let mut browser = Browser {
            driver,
            port,
            session: String::new(),
        };
        browser.wait_until_ready();
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.to_string_lossy(),
                "args": chromium_args(profile_dir),
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let created = browser.call("POST", "/session", Some(&capabilities));
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session from chromedriver: {created}"))
            .to_string();
        browser
    }

    /// The port chromedriver listens on: a URL on this machine that answers.
    pub fn driver_url(&self) -> String {
        format!("http://127.0.0.1:{}/status", self.port)
    }

    fn wait_until_ready(&mut self) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if let Ok(reply) = http(self.port, "GET", "/status", None)
                && reply["value"]["ready"] == true
            {
                return;
            }
            if let Ok(Some(status)) = self.driver.try_wait() {
                panic!("chromedriver exited at start: {status}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("chromedriver did not answer on port {} in 30 s", self.port);
    }

    /// A WebDriver command of this session; its `value`, or a panic with WebDriver's error.
    fn session_call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let reply = http(self.port, method, path, body)
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        let value = reply["value"].clone();
        if value.get("error").is_some() {
            panic!("WebDriver {method} {path} failed: {value}");
        }
        value
    }

    pub fn open(&self, url: &str) {
        self.session_call("POST", "/url", Some(&json!({"url": url})));
    }

    /// Runs `script` in the page (a function body; `return` gives the value; a returned promise
    /// is awaited).
    pub fn run(&self, script: &str) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            Some(&json!({"script": script, "args": []})),
        )
    }

    /// A real click (WebDriver moves the pointer there and presses) on the first element that
    /// matches `css`.
    pub fn click(&self, css: &str) {
        let found = self.session_call(
            "POST",
            "/element",
            Some(&json!({"using": "css selector", "value": css})),
        );
        let id = found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element matches {css}: {found}"));
        self.session_call("POST", &format!("/element/{id}/click"), Some(&json!({})));
    }

    /// The browser console's entries since the last call: (level, message).
    pub fn console(&self) -> Vec<(String, String)> {
        let entries = self.session_call("POST", "/se/log", Some(&json!({"type": "browser"})));
        entries
            .as_array()
            .unwrap_or_else(|| panic!("the browser log is not a list: {entries}"))
            .iter()
            .map(|e| {
                (
                    e["level"].as_str().unwrap_or("").to_string(),
                    e["message"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = http(
                self.port,
                "DELETE",
                &format!("/session/{}", self.session),
                None,
            );
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// One HTTP/1.1 request to chromedriver on this machine, the connection closed after it; the
/// reply's JSON body.
fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .map_err(|e| e.to_string())?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let (head, content) = read_reply(&mut stream)?;
    serde_json::from_str(&content).map_err(|e| format!("{e}: {head}\n{content}"))
}

/// An HTTP reply's head and body: the body read to its `Content-Length` (chromedriver keeps the
/// connection open whatever the request asks), or to the end of a chunked body, or to the close.
fn read_reply(stream: &mut TcpStream) -> Result<(String, String), String> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 65536];
    let mut head_end = None;
    loop {
        if let Some(end) = head_end {
            let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
            let body = &bytes[end + 4..];
            let length = head.lines().find_map(|l| {
                l.strip_prefix("content-length:")
                    .and_then(|v| v.trim().parse::<usize>().ok())
            });
            let complete = match length {
                Some(n) => body.len() >= n,
                None if head.contains("transfer-encoding: chunked") => {
                    body.windows(5).any(|w| w == b"0\r\n\r\n")
                }
                None => false,
            };
            if complete {
                break;
            }
        }
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n]);
        if head_end.is_none() {
            head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n");
        }
    }
    let end = head_end.ok_or_else(|| "no HTTP reply head".to_string())?;
    let head = String::from_utf8_lossy(&bytes[..end]).to_string();
    let body = String::from_utf8(bytes[end + 4..].to_vec()).map_err(|e| e.to_string())?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        unchunk(&body)?
    } else {
        body
    };
    Ok((head, body))
}

/// The body of a chunked HTTP reply.
fn unchunk(mut rest: &str) -> Result<String, String> {
    let mut out = String::new();
    loop {
        let (size, after) = rest
            .split_once("\r\n")
            .ok_or("a chunk without its size line")?;
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|e| format!("chunk size {size:?}: {e}"))?;
        if size == 0 {
            return Ok(out);
        }
        let chunk = after.get(..size).ok_or("a chunk shorter than its size")?;
        out.push_str(chunk);
        rest = after[size..].trim_start_matches("\r\n");
    }
}
