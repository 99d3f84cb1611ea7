"""LangChain's own fake chat model, recording what it receives (tools bound as given)."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from pydantic import Field


class ScriptedChat(GenericFakeChatModel):
    """``GenericFakeChatModel`` that takes tools (a scripted model calls them itself)."""

    received: list = Field(default_factory=list)

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.received.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
