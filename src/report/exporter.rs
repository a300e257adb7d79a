//! The one trait every exporter implements, for runs here and for comparisons in `compare/`.

/// Renders one kind of data in one format.
pub trait Exporter<T: ?Sized> {
    /// The file the output is saved under (in a run directory), or its extension.
    fn file_name(&self) -> &'static str;
    fn render(&self, data: &T) -> anyhow::Result<String>;
}
