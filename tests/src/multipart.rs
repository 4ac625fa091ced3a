//! multipart/form-data bodies, as a browser's `FormData` sends them.

/// A form being written: fields and files in order.
pub struct Form {
    boundary: String,
    body: Vec<u8>,
}

impl Default for Form {
    fn default() -> Self {
        Self::new()
    }
}

impl Form {
    pub fn new() -> Self {
        Self {
            boundary: format!("----platformtests{:016x}", crate::unique() as u64),
            body: Vec::new(),
        }
    }

    /// A text field.
    pub fn field(mut self, name: &str, value: &str) -> Self {
        self.body.extend_from_slice(
            format!(
                "--{}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n",
                self.boundary
            )
            .as_bytes(),
        );
        self
    }

    /// A file part.
    pub fn file(mut self, name: &str, filename: &str, content_type: &str, bytes: &[u8]) -> Self {
        self.body.extend_from_slice(
            format!(
                "--{}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n",
                self.boundary
            )
            .as_bytes(),
        );
        self.body.extend_from_slice(bytes);
        self.body.extend_from_slice(b"\r\n");
        self
    }

    /// The `Content-Type` header of the form.
    pub fn content_type(&self) -> String {
        format!("multipart/form-data; boundary={}", self.boundary)
    }

    /// The closing boundary, written once before the body is sent.
    pub fn head_and_tail(&self, file_name: &str, filename: &str) -> (Vec<u8>, Vec<u8>) {
        let mut head = self.body.clone();
        head.extend_from_slice(
            format!(
                "--{}\r\nContent-Disposition: form-data; name=\"{file_name}\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                self.boundary
            )
            .as_bytes(),
        );
        let tail = format!("\r\n--{}--\r\n", self.boundary).into_bytes();
        (head, tail)
    }

    /// The whole body.
    pub fn body(&self) -> Vec<u8> {
        let mut body = self.body.clone();
        body.extend_from_slice(format!("--{}--\r\n", self.boundary).as_bytes());
        body
    }
}
