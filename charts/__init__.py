"""Chart builders and the in-browser player shared by the app pages and the export CLI."""
